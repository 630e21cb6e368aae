"""Prints the sorted DT_NEEDED libraries of an ELF executable on one line
(without the dynamic loader), read with readelf."""
import re
import subprocess
import sys

out = subprocess.run(["readelf", "-d", sys.argv[1]], check=True,
                     capture_output=True, text=True).stdout
names = sorted(n for n in re.findall(r"\(NEEDED\)\s+Shared library: \[(.*?)\]",
                                     out) if not n.startswith("ld-linux"))
print(" ".join(names))
