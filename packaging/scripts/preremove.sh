#!/bin/sh
# outbox package: before removal. Stops the agent (SIGTERM: its last upload pass runs, what is
# left stays in /var/lib/outbox) on a removal, not on an upgrade: dpkg passes "remove", rpm 0.
set -e
case "$1" in
remove | 0)
	if [ -d /run/systemd/system ]; then
		systemctl disable --now outbox.service >/dev/null 2>&1 || true
	fi
	;;
esac
exit 0
