"""Writes the manifest of a package that a test assembles by hand.

weftc lists every file of a package in manifest.json ("files": path, bytes,
sha256) and writes manifest.json.sha256 beside it; weft-run checks both
before a launch. Test packages built without weftc do the same here, so
that weft-run accepts them.
"""

import hashlib
import json
import os


def _digest(path):
    with open(path, "rb") as f:
        data = f.read()
    return len(data), hashlib.sha256(data).hexdigest()


def write_manifest(pkg, manifest):
    """Adds "files" for every file under pkg (through symlinked folders)
    and writes pkg/manifest.json and pkg/manifest.json.sha256."""
    files = []
    for folder, _, names in os.walk(pkg, followlinks=True):
        for name in names:
            full = os.path.join(folder, name)
            relative = os.path.relpath(full, pkg).replace(os.sep, "/")
            if relative in ("manifest.json", "manifest.json.sha256"):
                continue
            if not os.path.isfile(full):
                continue
            size, sha = _digest(full)
            files.append({"path": relative, "bytes": size, "sha256": sha})
    manifest = dict(manifest, files=sorted(files, key=lambda f: f["path"]))
    text = json.dumps(manifest, indent=1) + "\n"
    with open(os.path.join(pkg, "manifest.json"), "w") as f:
        f.write(text)
    with open(os.path.join(pkg, "manifest.json.sha256"), "w") as f:
        f.write(hashlib.sha256(text.encode()).hexdigest() + "  manifest.json\n")


def refresh_manifest(pkg):
    """Re-lists the files of pkg after a test changed one of them."""
    with open(os.path.join(pkg, "manifest.json")) as f:
        manifest = json.load(f)
    manifest.pop("files", None)
    write_manifest(pkg, manifest)
