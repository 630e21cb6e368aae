#!/usr/bin/env python3
"""Starts weftc with a private TMPDIR, sends it a signal while it writes its
object file, and reports how it ended and what it left in TMPDIR.

Usage: interrupt.py SIGNAL TMPDIR [--ignored] -- WEFTC ARGS...

SIGNAL is INT, TERM or HUP. With --ignored weftc starts with SIGNAL ignored
(as under nohup or `trap '' INT`) and is sent it anyway. Prints
"exit N" (128 + the signal's number when the signal ended it, as a shell
reports it) and "left in TMPDIR: NAMES" or "left in TMPDIR: nothing", after
"sent SIGNAL" when the signal went out while weftc ran.
"""
import glob
import os
import signal
import subprocess
import sys
import time


def main():
    if "--" not in sys.argv or len(sys.argv) < 5:
        print(__doc__.strip(), file=sys.stderr)
        return 1
    split = sys.argv.index("--")
    options, command = sys.argv[1:split], sys.argv[split + 1:]
    sig = getattr(signal, "SIG" + options[0])
    tmpdir = options[1]
    ignored = "--ignored" in options[2:]
    env = dict(os.environ, TMPDIR=tmpdir)

    def start():
        # Set either way: lit's workers ignore SIGINT, and children inherit
        # that.
        signal.signal(sig, signal.SIG_IGN if ignored else signal.SIG_DFL)

    proc = subprocess.Popen(command, env=env, preexec_fn=start)
    # The object file appears in weftc's scratch folder when code emission
    # starts and stays until weftc ends: a signal then lands mid-compile.
    deadline = time.time() + 120
    sent = False
    while proc.poll() is None and time.time() < deadline:
        if glob.glob(os.path.join(tmpdir, "weftc-*", "*.o")):
            proc.send_signal(sig)
            sent = True
            print("sent SIG" + options[0])
            sys.stdout.flush()
            break
        time.sleep(0.002)
    code = proc.wait()
    if not sent:
        print("weftc ended before the signal could be sent; "
              "give it a larger model")
    print("exit %d" % (128 - code if code < 0 else code))
    left = sorted(os.listdir(tmpdir))
    print("left in TMPDIR: " + (" ".join(left) if left else "nothing"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
