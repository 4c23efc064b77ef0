#!/bin/sh
# outbox package: after removal. The queue in /var/lib/outbox is kept: it may hold events not
# yet uploaded. Delete it by hand once it is empty (`outbox inspect --data-dir /var/lib/outbox`).
set -e
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload >/dev/null 2>&1 || true
fi
exit 0
