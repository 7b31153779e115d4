#!/bin/sh
# The image's entrypoint: whisper-subtitler as the user PUID:PGID (default 1000:1000), as linuxserver.io images do.
#   IMAGE                      -> whisper-subtitler watch /media  (the image's CMD)
#   IMAGE serve --library /media ...   IMAGE transcribe ...   IMAGE queue --json
#                              -> whisper-subtitler with those arguments
#   IMAGE sh | bash | python3 | /an/absolute/command ...  -> that command, as the same user
# Started as root (the default), it gives the user `subtitler` the ids PUID and PGID, makes /state theirs, and drops
# to them (setpriv); started with --user, it runs as that user and changes nothing.
set -eu

case "${1:-}" in
  whisper-subtitler) shift ;;
esac
case "${1:-}" in
  sh|bash|python|python3|/*) ;;
  *) set -- whisper-subtitler "$@" ;;
esac

if [ "$(id -u)" != 0 ]; then
  exec "$@"
fi

PUID="${PUID:-1000}"
PGID="${PGID:-1000}"
if [ "$PUID" = 0 ]; then
  echo "entrypoint: PUID=0 runs as root; give the id of the user that owns /media" >&2
  exec "$@"
fi
[ "$(id -g subtitler)" = "$PGID" ] || groupmod -o -g "$PGID" subtitler
[ "$(id -u subtitler)" = "$PUID" ] || usermod -o -u "$PUID" subtitler
mkdir -p /state
# /state (the queue, the converted models) belongs to the user: changed once, or again after a new PUID/PGID
if [ "$(stat -c %u:%g /state)" != "$PUID:$PGID" ]; then
  chown -R "$PUID:$PGID" /state
fi
exec setpriv --reuid="$PUID" --regid="$PGID" --init-groups -- "$@"
