#!/usr/bin/env bash
# Finds CPython interpreters by version, and builds the missing ones from
# Debian's source package (unstable, then experimental) into a cache of their own;
# where the archive does not serve that source, a GIL build comes from Debian's
# binary packages instead (unstable), unpacked with their own C library.
#   bash scripts/pythons.sh 3.12 3.13 3.14 3.14t   make sure each exists (build if needed)
#   bash scripts/pythons.sh --which 3.13           print that interpreter's path
# A version ending in "t" is the free-threaded build (--disable-gil).
# Looks, in order, in: the cache, pyenv (~/.pyenv/versions/X.Y.*), PATH.
# Builds go to ${ROWFORMAT_PYTHONS:-~/.cache/rowformat-pythons}/<version>
# (./configure --prefix=... && make -j2 && make install, no PGO), or
# <version>/root for Debian's binaries: a second run finds them and costs
# nothing. The archive's address comes from this machine's own apt sources; the
# build dependencies are installed with apt-get.
set -euo pipefail
CACHE="${ROWFORMAT_PYTHONS:-$HOME/.cache/rowformat-pythons}"
JOBS="${JOBS:-2}"
log() { echo "pythons.sh: $*" >&2; }

# the interpreter's path for a version such as 3.13 or 3.14t, if there is one that runs
find_python() {
    local v="$1" base="${1%t}" ft=0 c
    [ "$v" != "$base" ] && ft=1
    local cands=("$CACHE/$v/bin/python$v")
    if [ "$ft" = 0 ]; then
        # pyenv's newest patch release of that version first
        while IFS= read -r c; do cands+=("$c"); done < <(
            ls -d "$HOME"/.pyenv/versions/"$base".[0-9]*/bin/python"$base" 2>/dev/null | sort -rV)
    else
        while IFS= read -r c; do cands+=("$c"); done < <(
            ls -d "$HOME"/.pyenv/versions/"$base".[0-9]*t/bin/python"$v" 2>/dev/null | sort -rV)
    fi
    c="$(command -v "python$v" 2>/dev/null || true)"
    [ -n "$c" ] && cands+=("$c")
    for c in "${cands[@]}"; do
        [ -x "$c" ] || continue
        # the right version, free-threaded or not as asked, and able to make venvs
        if "$c" -c "import sys, sysconfig, venv, ensurepip
want = '$base', $ft
got = '%d.%d' % sys.version_info[:2], int(bool(sysconfig.get_config_var('Py_GIL_DISABLED')))
sys.exit(got != want)" 2>/dev/null; then
            echo "$c"; return 0
        fi
    done
    return 1
}

# the Debian archive's URI from this machine's apt sources (one-line or deb822)
debian_archive() {
    local f uri
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        uri="$(awk '$1 ~ /^deb(-src)?$/ {   # deb [opt=... opt=...] URI suite...
                i = 2; if ($2 ~ /^\[/) { while (i < NF && $i !~ /\]$/) i++; i++ }; print $i }' "$f" \
            | grep -E '/debian/?$' | head -1 || true)"
        [ -n "$uri" ] && { echo "${uri%/}"; return 0; }
    done
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        uri="$(awk 'tolower($1) == "uris:" { for (i = 2; i <= NF; i++) print $i }' "$f" \
            | grep -E '/debian/?$' | head -1 || true)"
        [ -n "$uri" ] && { echo "${uri%/}"; return 0; }
    done
    return 1
}

# apt-get on a private state (sources, lists, cache, an empty dpkg status) for
# Debian unstable and experimental, leaving the machine's own apt untouched:
#   sid_apt update | sid_apt source ... | sid_apt install --download-only ...
sid_apt() {
    local archive apt="$CACHE/apt" key=/usr/share/keyrings/debian-archive-keyring.gpg
    archive="$(debian_archive)" || { log "no Debian archive in /etc/apt/sources*"; return 1; }
    mkdir -p "$apt/lists/partial" "$apt/archives/partial" "$apt/none"
    touch "$apt/status"
    {
        for kind in deb deb-src; do
            echo "$kind [signed-by=$key] $archive sid main"
            echo "$kind [signed-by=$key] $archive experimental main"
        done
    } > "$apt/sources.list"
    apt-get -q -o "Dir::Etc::SourceList=$apt/sources.list" -o "Dir::Etc::SourceParts=$apt/none" \
        -o "Dir::Etc::Preferences=/dev/null" -o "Dir::Etc::PreferencesParts=$apt/none" \
        -o "Dir::State::Lists=$apt/lists" -o "Dir::State::status=$apt/status" \
        -o "Dir::Cache=$apt" -o "Dir::Cache::archives=${APT_ARCHIVES:-$apt/archives}" \
        -o "APT::Architectures::=$(dpkg --print-architecture)" -o "Debug::NoLocking=1" \
        -o "APT::Sandbox::User=root" "$@" >&2
}

# downloads Debian's python3.X source package; prints the directory holding the upstream tarball
fetch_source() {
    local base="$1" dir="$CACHE/src/python$1"
    if ls "$dir"/python"$base"_*.orig.tar.* >/dev/null 2>&1; then echo "$dir"; return 0; fi
    mkdir -p "$dir"
    log "fetching the python$base source package (Debian sid, experimental)"
    sid_apt update
    (cd "$dir" && sid_apt source --download-only "python$base") || true
    ls "$dir"/python"$base"_*.orig.tar.* >/dev/null 2>&1 \
        || { log "the archive did not serve the python$base source package"; return 1; }
    echo "$dir"
}

# Debian's binary packages of python3.X (unstable) unpacked into <version>/root,
# their C library with them: the interpreter gets that library's dynamic loader
# and search path (patchelf), so it runs beside this machine's older glibc.
install_debian_binaries() {
    local base="$1" dest="$CACHE/$1" root d multiarch
    local debs="$CACHE/debs/$base"
    rm -rf "$debs" "$dest.partial" && mkdir -p "$debs/partial" "$dest.partial/root" "$dest.partial/bin"
    log "fetching Debian's python$base binary packages (sid) and their libraries"
    sid_apt update
    APT_ARCHIVES="$debs" sid_apt install -y --download-only --no-install-recommends \
        "python$base" "python$base-venv" "python$base-dev" \
        || { log "no python$base binary packages in sid or experimental"; return 1; }
    root="$dest.partial/root"
    for d in "$debs"/*.deb; do dpkg-deb -x "$d" "$root"; done
    multiarch="$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)"
    local lib="$dest/root/usr/lib/$multiarch" exe="$root/usr/bin/python$base"
    patchelf --set-interpreter "$lib/$(basename "$(ls "$root/usr/lib/$multiarch"/ld-linux*.so.*)")" \
        --force-rpath --set-rpath "$lib" "$exe"
    # paths the packages expect at / : the wheels ensurepip installs from, the headers
    sed -i "s|'/usr/share/python-wheels|'$dest/root/usr/share/python-wheels|g; \
            s|/usr/include/python$base|$dest/root/usr/include/python$base|g" \
        "$root/usr/lib/python$base"/_sysconfigdata_*.py
    # Debian's pyconfig.h only includes <$multiarch/python3.X/pyconfig.h> from /usr/include
    cp "$root/usr/include/$multiarch/python$base/pyconfig.h" "$root/usr/include/python$base/pyconfig.h"
    ln -s "../root/usr/bin/python$base" "$dest.partial/bin/python$base"
    rm -rf "$dest" && mv "$dest.partial" "$dest"
    rm -rf "$debs"
    log "unpacked Debian's python$base into $dest"
}

install_build_deps() {
    local want=(build-essential pkg-config xz-utils libssl-dev zlib1g-dev libbz2-dev liblzma-dev
                libffi-dev libsqlite3-dev libreadline-dev libncurses-dev uuid-dev libgdbm-dev
                libexpat1-dev libzstd-dev patchelf) missing=() p
    for p in "${want[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
    done
    [ "${#missing[@]}" = 0 ] && return 0
    log "apt-get install ${missing[*]}"
    local sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo apt-get -q update >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get -q install -y --no-install-recommends "${missing[@]}" >&2
}

# builds each version given (all of one X.Y from one unpacked source, in parallel)
build_pythons() {
    local base="$1"; shift
    local srcdir tarball work v pids=() rc=0
    if ! srcdir="$(fetch_source "$base")"; then
        [ "$*" = "$base" ] && { install_debian_binaries "$base"; return; }
        local gil=""; for v in "$@"; do [ "$v" = "$base" ] && gil=1; done
        [ -n "$gil" ] && install_debian_binaries "$base"
        log "no free-threaded $base: it needs CPython's source (Debian ships no --disable-gil" \
            "build of python$base), and the archive did not serve the python$base source package"
        return 1
    fi
    tarball="$(ls "$srcdir"/python"$base"_*.orig.tar.* | head -1)"
    work="$CACHE/src/build-$base"
    rm -rf "$work" && mkdir -p "$work"
    log "unpacking $(basename "$tarball")"
    tar -xf "$tarball" -C "$work"
    local tree; tree="$(ls -d "$work"/*/ | head -1)"
    local jobs=$(( JOBS / $# )); [ "$jobs" -lt 1 ] && jobs=1
    for v in "$@"; do
        (
            local flags=() out="$work/obj-$v" t0=$SECONDS
            [ "$v" != "$base" ] && flags+=(--disable-gil)
            mkdir -p "$out" && cd "$out"
            log "building $v into $CACHE/$v (log: $out/build.log)"
            # configured for its final prefix, installed into a staging root, then moved
            # there: an interrupted build never leaves a half-installed interpreter
            { "$tree/configure" --prefix="$CACHE/$v" --with-ensurepip=install "${flags[@]}" \
                && make -j"$jobs" && make install DESTDIR="$work/stage-$v"; } > build.log 2>&1 \
                || { tail -30 build.log >&2; log "building $v failed"; exit 1; }
            rm -rf "$CACHE/$v" && mv "$work/stage-$v$CACHE/$v" "$CACHE/$v"
            log "built $v in $((SECONDS - t0)) s"
        ) &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || rc=1; done
    [ "$rc" = 0 ] && rm -rf "$work"
    return "$rc"
}

if [ "${1:-}" = --which ]; then
    [ $# = 2 ] || { echo "usage: $0 --which VERSION" >&2; exit 2; }
    find_python "$2" || { log "no CPython $2 (run: bash scripts/pythons.sh $2)"; exit 1; }
    exit 0
fi
[ $# -ge 1 ] || { echo "usage: $0 VERSION... | --which VERSION   (e.g. 3.12 3.14 3.14t)" >&2; exit 2; }

declare -A todo=()
for v in "$@"; do
    [[ "$v" =~ ^3\.[0-9]+t?$ ]] || { log "not a version: $v (want e.g. 3.14 or 3.14t)"; exit 2; }
    if p="$(find_python "$v")"; then
        log "$v: $p"
    else
        todo[${v%t}]+=" $v"
    fi
done
[ "${#todo[@]}" = 0 ] && exit 0
install_build_deps
for base in "${!todo[@]}"; do
    # shellcheck disable=SC2086
    build_pythons "$base" ${todo[$base]} || true
done
rc=0
for v in "$@"; do
    if p="$(find_python "$v")"; then log "$v: $p"; else log "$v: MISSING"; rc=1; fi
done
exit "$rc"
