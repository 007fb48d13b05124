#!/usr/bin/env bash
# Build and install pgvector for the local PostgreSQL, then prove CREATE EXTENSION works.
#
# Debian's current release ships no pgvector package, so this builds it from the
# source package of the *next* Debian release:
#   1. the mirror URI is read from this machine's own Debian sources (never hard-coded);
#   2. a private `deb-src` list for the next release is written to a temporary
#      directory and used with private apt state (the system's lists are untouched);
#   3. `apt-get source pgvector` fetches it; it builds against postgresql-server-dev-N
#      for this machine's CPU (pgvector's default OPTFLAGS=-march=native: the build is
#      never copied elsewhere, and AVX2/FMA halve the distance computations; set
#      PGVECTOR_OPTFLAGS="" for a portable build);
#   4. `make install`, then CREATE EXTENSION vector in a scratch database.
# Idempotent: an installed extension is only checked (PGVECTOR_REBUILD=1 rebuilds it).
# Needs root (apt, make install).
set -euo pipefail

log() { printf 'install-pgvector: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

PG_MAJOR="${PG_MAJOR:-$(ls /usr/lib/postgresql 2>/dev/null | sort -V | tail -1)}"
[ -n "$PG_MAJOR" ] || die "no PostgreSQL under /usr/lib/postgresql"
PG_CONFIG="/usr/lib/postgresql/$PG_MAJOR/bin/pg_config"
PG_PORT="${PG_PORT:-5432}"
CONTROL="/usr/share/postgresql/$PG_MAJOR/extension/vector.control"

check_extension() {
    local db="noema_pgvector_check_$$"
    runuser -u postgres -- createdb -p "$PG_PORT" "$db"
    trap 'runuser -u postgres -- dropdb -p "$PG_PORT" --if-exists "$db"' RETURN
    runuser -u postgres -- psql -p "$PG_PORT" -d "$db" -v ON_ERROR_STOP=1 -qAt \
        -c "CREATE EXTENSION vector" \
        -c "SELECT 'pgvector ' || extversion FROM pg_extension WHERE extname = 'vector'"
}

if [ -f "$CONTROL" ] && [ "${PGVECTOR_REBUILD:-0}" != 1 ]; then
    log "pgvector is already installed for PostgreSQL $PG_MAJOR"
    check_extension
    exit 0
fi

# The Debian mirror this machine already uses: deb822 .sources files or sources.list.
# shellcheck disable=SC1091
codename="$(. /etc/os-release && echo "${VERSION_CODENAME:-}")"
mirror="$(
    {
        cat /etc/apt/sources.list.d/*.sources 2>/dev/null || true
    } | awk -v rel="$codename" '
        /^URIs:/ { uri = $2 }
        /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == rel && uri != "") { print uri; exit } }
    '
)"
if [ -z "$mirror" ] && [ -f /etc/apt/sources.list ]; then
    mirror="$(awk -v rel="$codename" '$1 == "deb" && $3 == rel { print $2; exit }' /etc/apt/sources.list)"
fi
[ -n "$mirror" ] || die "no Debian mirror for '$codename' in /etc/apt/sources.list{,.d/*.sources}"

case "$codename" in
    bullseye) next=bookworm ;;
    bookworm) next=trixie ;;
    trixie) next=forky ;;
    *) die "do not know the Debian release after '$codename'" ;;
esac
log "PostgreSQL $PG_MAJOR; sources of Debian $next from $mirror"

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "postgresql-server-dev-$PG_MAJOR" dpkg-dev make gcc >/dev/null

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
echo "deb-src [signed-by=$keyring] $mirror $next main" > "$work/sources.list"
apt_private=(
    -o "Dir::Etc::SourceList=$work/sources.list"
    -o "Dir::Etc::SourceParts=/dev/null"
    -o "Dir::State::Lists=$work/lists"
    -o "APT::Sandbox::User=root"
)
apt-get "${apt_private[@]}" update -qq
(cd "$work" && apt-get "${apt_private[@]}" source -qq pgvector >/dev/null)
src="$(find "$work" -maxdepth 1 -type d -name 'pgvector-*' | head -1)"
[ -n "$src" ] || die "apt-get source pgvector unpacked nothing"
log "building $(basename "$src")"
make -s -C "$src" PG_CONFIG="$PG_CONFIG" OPTFLAGS="${PGVECTOR_OPTFLAGS--march=native}" >/dev/null
make -s -C "$src" PG_CONFIG="$PG_CONFIG" install >/dev/null
check_extension
