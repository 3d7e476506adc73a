# shellcheck shell=bash
# Shared by deploy/local/up, down, status, reset, prepare-services (and deploy/chaos, the deploy/
# scripts). Source it first: it checks the shell, and otherwise only defines.

# bash 4 or newer ([[ -v ]] and more). macOS ships bash 3.2 as /bin/bash: `brew install bash`
# puts a current one first on PATH, where #!/usr/bin/env bash finds it. Only bash 3.2 syntax up to `fi`.
if [ -z "${BASH_VERSION:-}" ] || [ "${BASH_VERSION%%.*}" -lt 4 ]; then
    echo "${0##*/}: needs bash 4 or newer, and this is ${BASH_VERSION:+bash }${BASH_VERSION:-not bash}." \
        "On macOS: brew install bash, open a new terminal, and run it again (it starts with #!/usr/bin/env bash)." >&2
    exit 1
fi

# The system on this machine's own PostgreSQL and RabbitMQ: the variables and topology of
# docker-compose.yml, with the hosts at 127.0.0.1.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
RUN_DIR=${LOCAL_RUN_DIR:-$ROOT/deploy/local/run}
# What runs: one env file per service and relay instance in deploy/local/services, made from
# deploy/catalog.yaml by deploy/catalog/generate (each names its module and kind in a comment).
SERVICES=()
for _env in "$ROOT"/deploy/local/services/*.env; do
    [[ -f $_env ]] && _env=${_env##*/} && SERVICES+=("${_env%.env}")
done
unset _env
((${#SERVICES[@]})) || { echo "${0##*/}: no service in $ROOT/deploy/local/services (deploy/catalog/generate writes them)" >&2; exit 1; }

log() { printf '[%s] %s\n' "$(basename "$0")" "$*"; }
die() { log "$*" >&2; exit 1; }

# .env.local, then .env; a variable already in the environment wins over both.
load_env() {
    local file line key
    for file in "$ROOT/.env.local" "$ROOT/.env"; do
        [[ -f $file ]] || continue
        while IFS= read -r line || [[ -n $line ]]; do
            [[ $line =~ ^[[:space:]]*([A-Za-z_][A-Za-z0-9_]*)=(.*)$ ]] || continue
            key=${BASH_REMATCH[1]}
            [[ -v $key ]] || export "$key=${BASH_REMATCH[2]}"
        done < "$file"
    done
    export POSTGRES_HOST=${POSTGRES_HOST:-127.0.0.1} POSTGRES_PORT=${POSTGRES_PORT:-5432}
    export RABBITMQ_HOST=${RABBITMQ_HOST:-127.0.0.1} RABBITMQ_PORT=${RABBITMQ_PORT:-5672}
}

# deploy/postgres/create-databases.sql reads the passwords from the environment with \getenv: psql 15 or newer.
require_psql_15() {
    local version
    version=$(psql --version 2>/dev/null | sed -nE 's/^psql \(PostgreSQL\) ([0-9]+).*/\1/p')
    [[ -n $version ]] || die "psql not found: deploy/local needs PostgreSQL's psql client, 15 or newer"
    ((version >= 15)) || die "psql $version: deploy/local needs psql 15 or newer (create-databases.sql reads the" \
        "passwords with \\getenv); install PostgreSQL 15's client (Debian/Ubuntu: postgresql-client-15; macOS: brew install postgresql@15)"
}

# The topology into the local broker. Through standard input: given a path, the broker node reads
# the file as its own user, which cannot read a checkout in a private home directory.
import_broker_definitions() {
    rabbitmqctl -q import_definitions < "$1" > /dev/null
}

# The administrator the walkthrough and the republish script use for the management API (the
# compose broker has the same one instead of guest), with the password of .env.
ensure_broker_admin() {
    local password=${RABBITMQ_ADMIN_PASSWORD//\\/\\\\}
    password=${password//\"/\\\"}
    printf '{"users":[{"name":"%s","password":"%s","tags":"administrator"}],"permissions":[{"user":"%s","vhost":"/","configure":".*","write":".*","read":".*"}]}' \
        "$RABBITMQ_ADMIN_USER" "$password" "$RABBITMQ_ADMIN_USER" | rabbitmqctl -q import_definitions > /dev/null
}

check_service_name() {
    local s
    for s in "${SERVICES[@]}"; do [[ $s == "$1" ]] && return 0; done
    die "unknown service '$1' (one of: ${SERVICES[*]})"
}

env_file() { echo "$ROOT/deploy/local/services/$1.env"; }
# A variable of a service's env file as written there (${…} not expanded): env_value <service> <VARIABLE>.
env_value() { sed -n "s/^$2=//p" "$(env_file "$1")"; }
port_of() { env_value "$1" QUARKUS_HTTP_PORT; }
pid_file() { echo "$RUN_DIR/$1.pid"; }
log_file() { echo "$RUN_DIR/logs/$1.log"; }
# The Maven module a service runs from (a relay instance runs the outbox-relay jar), and its kind: service or relay.
module_of() { sed -n 's/^# module: //p' "$(env_file "$1")"; }
kind_of() { sed -n 's/^# kind: //p' "$(env_file "$1")"; }
services_of_kind() { local s; for s in "${SERVICES[@]}"; do [[ $(kind_of "$s") == "$1" ]] && echo "$s"; done; return 0; }
# The Maven modules of all services, once each, comma-separated (for ./mvnw -pl).
modules() { local s; for s in "${SERVICES[@]}"; do module_of "$s"; done | sort -u | paste -sd, -; }
# The queues of the topology (deploy/rabbitmq/definitions.json: one entry a line), one name a line.
topology_queues() {
    sed -n '/^  "queues": \[/,/^  \]/s/^ *{\{0,1\} *"name": *"\([^"]*\)".*/\1/p' "$ROOT/deploy/rabbitmq/definitions.json"
}
# The databases of the system: each service's, and the relays' offsets.
databases() {
    local s
    for s in "${SERVICES[@]}"; do
        env_value "$s" QUARKUS_DATASOURCE_JDBC_URL; env_value "$s" RELAY_OFFSETS_JDBC_URL
    done | sed -n 's#^jdbc:postgresql://[^/]*/\([A-Za-z0-9_]*\).*#\1#p' | sort -u
}
jar_of() { echo "$ROOT/$(module_of "$1")/target/quarkus-app/quarkus-run.jar"; }

# The pid of the service if this runner started it and it still runs (a reused pid does not count).
pid_of() {
    local file pid
    file=$(pid_file "$1")
    [[ -f $file ]] || return 1
    pid=$(<"$file")
    # ps rather than /proc: the same on Linux and macOS.
    [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null && ps -ww -p "$pid" -o args= 2>/dev/null | grep -q "$(module_of "$1")/target/quarkus-app" || return 1
    echo "$pid"
}

is_ready() { curl -fs -o /dev/null --max-time 2 "http://127.0.0.1:$(port_of "$1")/q/health/ready"; }

# GET or POST as one of the operations users (deploy/OPERATIONS.md, "Operations"): as_user <operator|monitor> <curl arguments…>.
# The password goes to curl on standard input, never on its command line (where ps shows it).
as_user() {
    local user=$1 password; shift
    case $user in
        operator) password=${OPERATOR_PASSWORD:-} ;;
        monitor) password=${MONITOR_PASSWORD:-} ;;
        *) die "no operations user '$user'" ;;
    esac
    [[ -n $password ]] || die "${user^^}_PASSWORD is not set (see .env)"
    password=${password//\\/\\\\}
    curl -K - "$@" <<< "user = \"$user:${password//\"/\\\"}\""
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Starts one service in the background with the variables of its env file; returns at once.
start_service() {
    local name=$1 pid port jar
    if pid=$(pid_of "$name"); then
        log "$name already running (pid $pid)"; return 0
    fi
    port=$(port_of "$name"); jar=$(jar_of "$name")
    [[ -f $jar ]] || die "$jar is missing: build first (deploy/local/up builds)"
    port_in_use "$port" && die "port $port is taken by another process; $name needs it"
    mkdir -p "$RUN_DIR/logs"
    (
        set -a
        # shellcheck disable=SC1090
        source "$(env_file "$name")"
        set +a
        # shellcheck disable=SC2086
        exec nohup java ${SERVICE_JAVA_OPTS:--Xmx512m -XX:+UseSerialGC} -jar "$jar" >> "$(log_file "$name")" 2>&1 < /dev/null
    ) &
    echo $! > "$(pid_file "$name")"
    log "$name starting on port $port (pid $!, log $(log_file "$name"))"
}

# SIGTERM and wait (the services finish what they hold), or SIGKILL with --kill.
# stop_services <signal> <service...>: signals them all at once, then waits for each to exit (a
# Quarkus service takes a second or two to finish what it holds; one after the other adds up).
stop_services() {
    local signal=$1 name pid deadline; shift
    local -A pids=()
    for name in "$@"; do
        if pid=$(pid_of "$name"); then
            kill "-$signal" "$pid"
            pids[$name]=$pid
        else
            rm -f "$(pid_file "$name")"
        fi
    done
    deadline=$((SECONDS + 60))
    for name in "$@"; do
        [[ -v "pids[$name]" ]] || continue
        pid=${pids[$name]}
        while kill -0 "$pid" 2>/dev/null; do
            if ((SECONDS >= deadline)); then
                log "$name (pid $pid) still running 60 s after SIG$signal; killing it"
                kill -KILL "$pid" 2>/dev/null || true
            fi
            sleep 0.2
        done
        rm -f "$(pid_file "$name")"
        log "$name stopped (SIG$signal, pid $pid)"
    done
}

await_ready() { # await_ready <seconds> <service...>
    local seconds=$1 name; shift
    local deadline=$((SECONDS + seconds))
    for name in "$@"; do
        until is_ready "$name"; do
            pid_of "$name" >/dev/null || { tail -n 30 "$(log_file "$name")" >&2; die "$name exited; its log ends above"; }
            if ((SECONDS >= deadline)); then
                tail -n 30 "$(log_file "$name")" >&2
                curl -sS --max-time 2 "http://127.0.0.1:$(port_of "$name")/q/health/ready" >&2 || true
                die "$name not ready after ${seconds}s; its log ends above"
            fi
            sleep 0.5
        done
        log "$name ready on http://localhost:$(port_of "$name")"
    done
}
