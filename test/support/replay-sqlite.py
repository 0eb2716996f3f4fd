"""Runs recorded leasehold calls again on the system's SQLite (Python's sqlite3).

Input (stdin, JSON): {"path": a migrated database file, "sequences": [[call, ...], ...]}
where a call is {"batch": bool, "ok": bool, "statements": [{"sql", "args"}]}.
Each sequence runs on its own copy of the file, in order; a batch is one
transaction. Output (stdout, JSON): the statements that failed here while
their call had succeeded where it was recorded, each {"sql", "error"}.
"""
import base64
import json
import os
import shutil
import sqlite3
import sys
import tempfile


def decode(v):
    if isinstance(v, dict) and "$int" in v:
        return int(v["$int"])
    if isinstance(v, dict) and "$blob" in v:
        return base64.b64decode(v["$blob"])
    return v


def bind(args):
    if isinstance(args, dict):
        return {k: decode(v) for k, v in args.items()}
    return [decode(v) for v in args]


def run(path, calls, out):
    tmp = tempfile.mkdtemp(prefix="leasehold-replay-")
    try:
        copy = os.path.join(tmp, "replay.db")
        shutil.copyfile(path, copy)
        db = sqlite3.connect(copy, isolation_level=None)
        db.execute("PRAGMA foreign_keys = ON")
        for call in calls:
            failed = None
            if call["batch"]:
                db.execute("BEGIN IMMEDIATE")
            for s in call["statements"]:
                try:
                    db.execute(s["sql"], bind(s["args"])).fetchall()
                except sqlite3.Error as e:
                    failed = (s["sql"], str(e))
                    break
            if call["batch"]:
                db.execute("ROLLBACK" if failed else "COMMIT")
            if failed and call["ok"]:
                out.append({"sql": failed[0], "error": failed[1]})
        db.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    data = json.load(sys.stdin)
    out = []
    for calls in data["sequences"]:
        run(data["path"], calls, out)
    json.dump(out, sys.stdout)


main()
