#!/bin/sh
# Container entrypoint: check that HERMES_HOME (/data) is writable by this user, then exec
# `hermes gateway run` (or `hermes <args>` when arguments are given, e.g. `config check`).
# Exit 78 (configuration error) when the volume is unusable, so nothing restarts in a loop.
set -eu

data="${HERMES_HOME:-/data}"
uid="$(id -u)"
gid="$(id -g)"

not_writable() {
    cat >&2 <<MSG
hermes: error: $data is not writable by the container user (uid $uid, gid $gid): $1
Fix it in one of these ways:
  - use a named volume, which Docker creates with the right owner:
      docker run -v hermes-data:$data ...
  - give a host directory to that user:   sudo chown -R $uid:$gid /path/on/host
  - or run as the directory's owner:       docker run --user "\$(id -u):\$(id -g)" ...
MSG
    exit 78
}

if [ ! -d "$data" ]; then
    mkdir -p "$data" 2>/dev/null || not_writable "it does not exist and cannot be created"
fi
probe="$data/.hermes-write-test.$$"
if ! ( : > "$probe" ) 2>/dev/null; then
    not_writable "cannot create files in it"
fi
rm -f "$probe"

if [ "$#" -eq 0 ]; then
    set -- gateway run
fi
exec hermes "$@"
