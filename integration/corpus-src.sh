#!/usr/bin/env bash
# integration/corpus-src.sh [DIR]: fetches the false-positive corpus's C
# project, libuv, as Debian's own source package (libuv1, the release this
# Debian ships) into DIR/libuv (default /var/cache/ward-corpus), once.
# apt-get source runs with a private source list made from the machine's
# own Debian sources (as deb-src) and a private lists directory: the
# system's apt configuration is not changed. Run by make deps.
set -euo pipefail
dir=${1:-/var/cache/ward-corpus}
[ -f "$dir/libuv/CMakeLists.txt" ] && exit 0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/lists/partial" "$tmp/parts"
: >"$tmp/src.list"
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
	[ -f "$f" ] && sed -n 's/^deb \(.*\)/deb-src \1/p' "$f" >>"$tmp/src.list"
done
for f in /etc/apt/sources.list.d/*.sources; do
	[ -f "$f" ] && sed 's/^Types:.*/Types: deb-src/' "$f" >"$tmp/parts/$(basename "$f")"
done
opts=(-q -o Dir::Etc::sourcelist="$tmp/src.list" -o Dir::Etc::sourceparts="$tmp/parts" -o Dir::State::Lists="$tmp/lists")
apt-get "${opts[@]}" update >"$tmp/update.log" 2>&1 || { cat "$tmp/update.log"; exit 1; }
(cd "$tmp" && apt-get "${opts[@]}" source --download-only libuv1 >"$tmp/source.log" 2>&1) || { cat "$tmp/source.log"; exit 1; }
orig=$(ls "$tmp"/libuv1_*.orig.tar.* | head -1)
rm -rf "$dir/libuv.tmp" && mkdir -p "$dir/libuv.tmp"
tar -xf "$orig" -C "$dir/libuv.tmp" --strip-components=1
mv "$dir/libuv.tmp" "$dir/libuv"
echo "corpus: libuv $(basename "$orig") in $dir/libuv"
