"""The sandbox's first process: limits itself, then runs the script. Standard library only
(it runs as a file, outside our packages).

argv: [child.py, run_dir]. Environment: `HERMES_LIMITS` (JSON: cpu_s, as_bytes, fsize_bytes,
nofile, nproc or null), `HERMES_CGROUP_PROCS` (optional: a pids cgroup to join first),
`HERMES_RPC_FD` (read by the generated `hermes_tools` module).
"""

import json
import os
import resource
import runpy
import sys


def _limit(kind: int, value: int) -> None:
    resource.setrlimit(kind, (value, value))


def main() -> int:
    run_dir = sys.argv[1]
    procs = os.environ.pop("HERMES_CGROUP_PROCS", "")
    if procs:
        with open(procs, "w") as fh:
            fh.write("0")
    limits = json.loads(os.environ.pop("HERMES_LIMITS"))
    _limit(resource.RLIMIT_CORE, 0)
    cpu = int(limits["cpu_s"])
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    _limit(resource.RLIMIT_FSIZE, int(limits["fsize_bytes"]))
    _limit(resource.RLIMIT_NOFILE, int(limits["nofile"]))
    if limits.get("nproc"):
        _limit(resource.RLIMIT_NPROC, int(limits["nproc"]))
    _limit(resource.RLIMIT_AS, int(limits["as_bytes"]))
    sys.path.insert(0, run_dir)
    script = os.path.join(run_dir, "script.py")
    sys.argv = ["script.py"]
    try:
        runpy.run_path(script, run_name="__main__")
    except (SystemExit, KeyboardInterrupt):
        raise
    except BaseException as exc:  # show the script's frames only
        import traceback

        tb = exc.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != script:
            tb = tb.tb_next
        traceback.print_exception(type(exc), exc, tb or exc.__traceback__)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
