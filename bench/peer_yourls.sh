#!/usr/bin/env bash
# YOURLS (a PHP URL shortener that stores each visit before it answers) on nginx + PHP-FPM + MariaDB, as a peer
# for bench/redirect.sh's `yourls` system. Run as root; every step is idempotent.
#
#   bash bench/peer_yourls.sh up                     # install what is missing, start MariaDB, PHP-FPM, nginx
#   bash bench/peer_yourls.sh seed LFTRACK_SEED OUT  # as many links as LFTRACK_SEED's keys, their keys to OUT
#   bash bench/peer_yourls.sh pids php-fpm|nginx|mariadb   # the processes whose CPU a run counts
#   bash bench/peer_yourls.sh rows                   # visits stored (rows of yourls_log)
#   bash bench/peer_yourls.sh stop                   # stop its nginx and PHP-FPM (MariaDB stays up)
#
# YOURLS answers http://127.0.0.1:$BENCH_YOURLS_PORT/<keyword> (8767) with a 301. Its source: BENCH_YOURLS_DIR if
# set (an unpacked YOURLS tree, used in place), else YOURLS_VERSION (the newest 1.x tag, 1.10.4 when written)
# from the local mirror's bare repository, else GitHub's tarball of that tag, unpacked under BENCH_YOURLS_HOME.
# Settings, chosen for a fair production shape on a small host:
#   PHP-FPM 8.2  its own pool on a unix socket, pm = static with BENCH_YOURLS_WORKERS workers (2 a core), no
#                recycling, opcache on without timestamp checks (the code does not change during a run)
#   nginx        its own server on 127.0.0.1:$BENCH_YOURLS_PORT, YOURLS's rewrite (try_files ... /yourls-loader.php),
#                worker_processes auto, keep-alive on (30 s, no per-connection request cap), no access log
#   MariaDB      the host's, as Debian ships it (InnoDB, innodb_flush_log_at_trx_commit=1: each commit durable),
#                reached on its unix socket (PHP opens a connection per request; over TCP the closed ones would
#                pile up in TIME_WAIT); started here when it is not running
#   YOURLS       YOURLS_URL_CONVERT 62 (keywords [0-9a-zA-Z]: lftrack's keys may hold - and _, so the links get
#                their own keys of the same lengths), YOURLS_NOSTATS false (every visit logged), YOURLS_PRIVATE
#                true (the admin and API need a login; redirects never do)
set -euo pipefail
shopt -s inherit_errexit
cd "$(dirname "$0")/.."

PORT=${BENCH_YOURLS_PORT:-8767}
HOME_DIR=${BENCH_YOURLS_HOME:-/var/tmp/lftrack-yourls}
WORKERS=${BENCH_YOURLS_WORKERS:-$(( 2 * $(nproc) ))}
YOURLS_VERSION=${YOURLS_VERSION:-}
MIRROR=${BENCH_YOURLS_MIRROR:-/work/.mirror/YOURLS+YOURLS/repo}
DB=yourls_bench
DB_USER=yourls
DB_PASS=yourls-bench-only
SQL() { mysql -uroot -N -B "$@"; }

packages() {
  local missing=()
  command -v nginx >/dev/null || missing+=(nginx)
  command -v php-fpm8.2 >/dev/null || missing+=(php8.2-fpm)
  [ -e /etc/php/8.2/mods-available/pdo_mysql.ini ] || missing+=(php8.2-mysql)
  [ -e /etc/php/8.2/mods-available/mbstring.ini ] || missing+=(php8.2-mbstring)
  command -v mariadbd >/dev/null || missing+=(mariadb-server)
  command -v curl >/dev/null || missing+=(curl)
  if [ ${#missing[@]} -gt 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

mariadb_up() {
  if ! mysqladmin -uroot ping >/dev/null 2>&1; then
    # No systemd here: initialize the data directory if it is empty, and start the server detached.
    [ -d /var/lib/mysql/mysql ] || mariadb-install-db --user=mysql --datadir=/var/lib/mysql >/dev/null
    mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld
    setsid /usr/sbin/mariadbd --user=mysql >>"$HOME_DIR/mariadb.log" 2>&1 < /dev/null &
    for _ in $(seq 1 100); do mysqladmin -uroot ping >/dev/null 2>&1 && break; sleep 0.2; done
    mysqladmin -uroot ping >/dev/null || { echo "peer_yourls: MariaDB did not start (see $HOME_DIR/mariadb.log)" >&2; exit 1; }
  fi
  SQL -e "CREATE DATABASE IF NOT EXISTS $DB;
          CREATE USER IF NOT EXISTS '$DB_USER'@'localhost' IDENTIFIED BY '$DB_PASS';
          GRANT ALL ON $DB.* TO '$DB_USER'@'localhost';"
}

# The YOURLS tree to serve: prints its path.
source_dir() {
  if [ -n "${BENCH_YOURLS_DIR:-}" ]; then echo "$BENCH_YOURLS_DIR"; return; fi
  local version=$YOURLS_VERSION
  if [ -z "$version" ] && [ -d "$MIRROR" ]; then
    version=$(git --git-dir="$MIRROR" tag -l '1.*' | grep -E '^1\.[0-9]+(\.[0-9]+)*$' | sort -V | tail -1)
  fi
  version=${version:-1.10.4}
  local dir="$HOME_DIR/YOURLS-$version"
  if [ ! -f "$dir/yourls-loader.php" ]; then
    mkdir -p "$dir.part"
    if [ -d "$MIRROR" ] && git --git-dir="$MIRROR" rev-parse -q --verify "refs/tags/$version" >/dev/null; then
      # A mirror may lack its largest blobs (the GeoLite2 database): archive what it has, say what it lacks.
      local missing=()
      while read -r _ _ blob path; do
        git --git-dir="$MIRROR" cat-file -e "$blob" 2>/dev/null || missing+=(":(exclude)$path")
      done < <(git --git-dir="$MIRROR" ls-tree -r "$version")
      [ ${#missing[@]} -eq 0 ] || echo "peer_yourls: the mirror lacks ${missing[*]#:(exclude)}" >&2
      # (git still names the excluded blob on stderr, and exits 0.)
      git --git-dir="$MIRROR" archive "$version" -- . "${missing[@]}" 2>/dev/null | tar -x -C "$dir.part"
    else
      curl -fsSL "https://github.com/YOURLS/YOURLS/archive/refs/tags/$version.tar.gz" | tar -xz --strip-components=1 -C "$dir.part"
    fi
    [ -f "$dir.part/yourls-loader.php" ] || { echo "peer_yourls: no YOURLS tree in $dir.part" >&2; exit 1; }
    rm -rf "$dir" && mv "$dir.part" "$dir"
  fi
  echo "$dir"
}

configure() {
  local root=$1
  if [ ! -f "$root/user/config.php" ] || ! grep -q "lftrack bench" "$root/user/config.php"; then
    cat >"$root/user/config.php" <<EOF
<?php
// Written by lftrack bench/peer_yourls.sh (lftrack bench): YOURLS as a redirect benchmark's peer.
define( 'YOURLS_DB_USER', '$DB_USER' );
define( 'YOURLS_DB_PASS', '$DB_PASS' );
define( 'YOURLS_DB_NAME', '$DB' );
define( 'YOURLS_DB_HOST', 'localhost' );
define( 'YOURLS_DB_PREFIX', 'yourls_' );
define( 'YOURLS_SITE', 'http://127.0.0.1:$PORT' );
define( 'YOURLS_LANG', '' );
define( 'YOURLS_UNIQUE_URLS', true );
define( 'YOURLS_PRIVATE', true );
define( 'YOURLS_NOSTATS', false );
define( 'YOURLS_COOKIEKEY', '$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')' );
\$yourls_user_passwords = [ 'bench' => 'bench-only-password' ];
define( 'YOURLS_URL_CONVERT', 62 );
define( 'YOURLS_DEBUG', false );
\$yourls_reserved_URL = [];
EOF
  fi
  cat >"$HOME_DIR/php-fpm.conf" <<EOF
[global]
pid = $HOME_DIR/php-fpm.pid
error_log = $HOME_DIR/php-fpm.log
daemonize = yes

[yourls]
user = www-data
group = www-data
listen = $HOME_DIR/php-fpm.sock
listen.owner = www-data
listen.group = www-data
listen.mode = 0660
listen.backlog = 1024
pm = static
pm.max_children = $WORKERS
pm.max_requests = 0
php_admin_value[opcache.enable] = 1
php_admin_value[opcache.validate_timestamps] = 0
php_admin_flag[display_errors] = off
EOF
  mkdir -p "$HOME_DIR/nginx"
  cat >"$HOME_DIR/nginx.conf" <<EOF
user www-data;
worker_processes auto;
pid $HOME_DIR/nginx.pid;
error_log $HOME_DIR/nginx-error.log warn;
events { worker_connections 4096; }
http {
  include /etc/nginx/mime.types;
  access_log off;
  keepalive_timeout 30s;
  keepalive_requests 10000000;
  server {
    listen 127.0.0.1:$PORT;
    root $root;
    index index.php;
    # YOURLS's documented nginx rule: what is not a file goes to its loader.
    location / { try_files \$uri \$uri/ /yourls-loader.php\$is_args\$args; }
    location ~ \.php\$ {
      try_files \$uri =404;
      include /etc/nginx/fastcgi_params;
      fastcgi_param SCRIPT_FILENAME \$document_root\$fastcgi_script_name;
      fastcgi_pass unix:$HOME_DIR/php-fpm.sock;
    }
  }
}
EOF
}

# YOURLS looks each visit's country up in includes/geo/GeoLite2-Country.mmdb (opened per request), and skips the
# lookup when the file is absent, as it is from a mirror that lacks large blobs. BENCH_YOURLS_GEOIP: a real
# GeoLite2 Country database to use. Otherwise a stand-in, so that each visit still opens a database and
# searches it: every public IPv4 /16 but the documentation ranges spread over ten countries (written with
# mmdb-writer, lftrack's test dependency), larger than the 128 KB its reader scans for metadata. wrk's addresses
# (198.51.100.0/24) are in neither the stand-in nor MaxMind's database, nor iptocc's (lftrack's lookup): each
# lookup ends without a country, in all three.
geoip() {
  local db="$1/includes/geo/GeoLite2-Country.mmdb"
  [ -f "$db" ] && return
  if [ -n "${BENCH_YOURLS_GEOIP:-}" ]; then cp "$BENCH_YOURLS_GEOIP" "$db"; return; fi
  echo "peer_yourls: no GeoLite2 Country database: writing a stand-in to $db" >&2
  .venv/bin/python - "$db" <<'PY'
import ipaddress
import sys

from mmdb_writer import MMDBWriter
from netaddr import IPSet

codes = ["US", "GB", "DE", "FR", "JP", "BR", "IN", "CN", "CA", "AU"]
networks: dict[str, list[str]] = {code: [] for code in codes}
documentation = [ipaddress.ip_network(net) for net in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24")]
for i, net in enumerate(ipaddress.ip_network("0.0.0.0/0").subnets(new_prefix=16)):
    if net.is_global and not net.is_multicast and not any(net.overlaps(doc) for doc in documentation):
        networks[codes[i % len(codes)]].append(str(net))
writer = MMDBWriter(ip_version=6, ipv4_compatible=True, database_type="GeoLite2-Country", languages=["en"])
for code, nets in networks.items():
    country = {"iso_code": code, "names": {"en": code}}
    writer.insert_network(IPSet(nets), {"country": country, "registered_country": country})
writer.to_db_file(sys.argv[1] + ".part")
PY
  mv "$db.part" "$db"
}

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

up() {
  mkdir -p "$HOME_DIR"
  packages
  mariadb_up
  local root
  root=$(source_dir)
  configure "$root"
  geoip "$root"
  alive "$HOME_DIR/php-fpm.pid" || php-fpm8.2 -y "$HOME_DIR/php-fpm.conf"
  alive "$HOME_DIR/nginx.pid" || nginx -p "$HOME_DIR/nginx" -c "$HOME_DIR/nginx.conf"
  for _ in $(seq 1 50); do curl -fs -o /dev/null "http://127.0.0.1:$PORT/robots.txt" && break; sleep 0.1; done
  if [ -z "$(SQL -e "SHOW TABLES FROM $DB LIKE 'yourls_log'")" ]; then
    curl -fs -o /dev/null -d install=1 "http://127.0.0.1:$PORT/admin/install.php"
    [ -n "$(SQL -e "SHOW TABLES FROM $DB LIKE 'yourls_log'")" ] || { echo "peer_yourls: YOURLS's install created no tables" >&2; exit 1; }
  fi
  # YOURLS reads its version from the options table after an install: print the one serving.
  echo "peer_yourls: YOURLS $(SQL -e "SELECT option_value FROM $DB.yourls_options WHERE option_name = 'version'") at http://127.0.0.1:$PORT ($root); PHP-FPM static x $WORKERS"
}

# One link per key in $1, each with a keyword of the same length from YOURLS's charset, destination
# https://shop.example.com/p/N?utm_source=bench like lftrack's; the keywords to $2. Replaces the previous run's
# links and empties the visit log.
seed() {
  local charset=0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ i=0 key line sql
  declare -A seen=()
  : >"$2"
  sql="DELETE FROM yourls_url WHERE url LIKE 'https://shop.example.com/p/%'; TRUNCATE yourls_log; INSERT INTO yourls_url (keyword, url, title, ip, clicks) VALUES "
  while IFS= read -r line; do
    [ -n "$line" ] || continue
    while :; do
      key=""
      for _ in $(seq 1 ${#line}); do key+=${charset:RANDOM % 62:1}; done
      [ -z "${seen[$key]:-}" ] && break
    done
    seen[$key]=1
    echo "$key" >>"$2"
    [ "$i" -gt 0 ] && sql+=","
    sql+="('$key', 'https://shop.example.com/p/$i?utm_source=bench', 'Post $((i % 20))', '127.0.0.1', 0)"
    i=$((i + 1))
  done <"$1"
  SQL "$DB" -e "$sql;"
  local first
  first=$(head -1 "$2")
  [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/$first")" = 301 ] || { echo "peer_yourls: /$first does not answer 301" >&2; exit 1; }
  SQL "$DB" -e "TRUNCATE yourls_log"
}

pids() {
  case "$1" in
    php-fpm) alive "$HOME_DIR/php-fpm.pid" && pgrep -P "$(cat "$HOME_DIR/php-fpm.pid")" | tr '\n' ' ' ;;
    nginx) alive "$HOME_DIR/nginx.pid" && pgrep -P "$(cat "$HOME_DIR/nginx.pid")" | tr '\n' ' ' ;;
    mariadb) pidof mariadbd || pidof mysqld ;;
  esac
  echo
}

stop() {
  local f
  for f in "$HOME_DIR/nginx.pid" "$HOME_DIR/php-fpm.pid"; do
    if alive "$f"; then
      local pid
      pid=$(cat "$f")
      kill "$pid"
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
  done
}

case "${1:-}" in
  up) up ;;
  seed) seed "$2" "$3" ;;
  pids) pids "$2" ;;
  rows) SQL -e "SELECT count(*) FROM $DB.yourls_log" 2>/dev/null || echo 0 ;;
  stop) stop ;;
  *) echo "usage: $0 up | seed LFTRACK_SEED OUT | pids php-fpm|nginx|mariadb | rows | stop" >&2; exit 2 ;;
esac
