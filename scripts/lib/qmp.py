#!/usr/bin/python3
"""A small QMP client for the fixture scripts (standard library only).

usage: qmp.py SOCKET COMMAND [JSON] [COMMAND [JSON]] ...

Runs the commands in order on one connection, after the capabilities
handshake. Each command's answer is printed as one JSON line
{"command", "seconds", "return"}; asynchronous events go to stderr. An
error answer stops the run with exit status 1. The connection closing
during "quit" is its normal end, not an error.
"""
import json
import socket
import sys
import time


class QmpError(Exception):
    pass


class Qmp:
    def __init__(self, path, wait=30.0):
        # QEMU creates the socket a moment after it starts: retry until then.
        deadline = time.monotonic() + wait
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self.sock.connect(path)
                break
            except OSError:
                self.sock.close()
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        self.stream = self.sock.makefile("rwb", buffering=0)
        greeting = self._message()
        if "QMP" not in greeting:
            raise QmpError(f"not a QMP greeting: {greeting}")
        self.execute("qmp_capabilities")

    def _message(self):
        line = self.stream.readline()
        if not line:
            raise EOFError("QEMU closed the QMP connection")
        return json.loads(line)

    def execute(self, command, arguments=None):
        request = {"execute": command}
        if arguments is not None:
            request["arguments"] = arguments
        self.stream.write(json.dumps(request).encode() + b"\r\n")
        while True:
            answer = self._message()
            if "event" in answer:
                print("qmp event:", json.dumps(answer), file=sys.stderr)
            elif "error" in answer:
                raise QmpError(f"{command}: {answer['error']}")
            else:
                return answer.get("return")


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    qmp = Qmp(argv[1])
    words = argv[2:]
    while words:
        command, words = words[0], words[1:]
        arguments = None
        if words and words[0].lstrip().startswith("{"):
            arguments, words = json.loads(words[0]), words[1:]
        start = time.monotonic()
        try:
            answer = qmp.execute(command, arguments)
        except EOFError:
            if command != "quit":
                raise
            answer = {}
        print(json.dumps({"command": command, "seconds": round(time.monotonic() - start, 3),
                          "return": answer}), flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except (QmpError, EOFError, OSError) as e:
        sys.exit(f"qmp.py: {e}")
