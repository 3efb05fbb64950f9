#!/usr/bin/env bash
# `sieve serve` behind TLS, as docs/server.md says to run it: Debian's nginx in front on loopback
# with a self-signed certificate made here, and behind it two servers on plain HTTP: one with scoped
# keys, one without keys but with per-address rate limits and --client-address-header X-Real-IP.
# Checks, with curl:
#   - HTTPS answers equal the plain server's, byte for byte (/health, /v1/embeddings, /v1/search);
#   - the certificate is verified (curl without --cacert refuses it), plain HTTP to the TLS port
#     is refused, and the keys still hold through the proxy (401 without, 403 for a read key);
#   - per-address limits see the client's address, not the proxy's: two clients on 127.0.0.2 and
#     127.0.0.3 each get their own bucket (the first over its rate is 429 with Retry-After, the
#     other still 200).
# Exit 0: passed; 77: skipped (no nginx, openssl or default model; scripts/setup.sh --oracles
# installs nginx-light). ctest: contract.tls_proxy.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
B="${SIEVE_BUILD_DIR:-$root/build}"
skip=77
[[ "${CI:-}" == "true" ]] && skip=1
NGINX="$(command -v nginx || echo /usr/sbin/nginx)"
[[ -x "$NGINX" ]] || { echo "tls: skipped: nginx is not installed (scripts/setup.sh --oracles)"; exit $skip; }
command -v openssl >/dev/null || { echo "tls: skipped: no openssl"; exit $skip; }
command -v curl >/dev/null || { echo "tls: skipped: no curl"; exit $skip; }
"$B/sieve" model list 2>/dev/null | grep -q '^\*' || { echo "tls: skipped: no default model installed"; exit $skip; }
work="$(mktemp -d)"
pid="" pid2="" npid=""
cleanup() {
  for p in $npid $pid $pid2; do kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "tls: FAILED: $*"; echo "--- sieve serve log"; cat "$work/serve.log"; echo "--- nginx error log"; cat "$work/error.log" 2>/dev/null; exit 1; }

# A self-signed certificate for 127.0.0.1 (as its subject alternative name).
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=sieve test" -addext "subjectAltName=IP:127.0.0.1" \
  -keyout "$work/key.pem" -out "$work/cert.pem" 2> /dev/null
printf 'r1 read\nadmin1 admin\n' > "$work/keys"
printf 'd1\tthe dog bit the man\nd2\tthe man bit the dog\nd3\ta red car is parked near the house\n' > "$work/c.tsv"
"$B/sieve" index build --corpus "$work/c.tsv" --out "$work/ix" > /dev/null 2>&1
start() {  # start LOG ARGS...: sieve serve in the background; sets $started_pid and $started_port
  local log="$1"
  shift
  "$B/sieve" serve --index "$work/ix" --port 0 "$@" 2> "$log" &
  started_pid=$!
  started_port=""
  for _ in $(seq 600); do
    grep -q ready "$log" && started_port=$(sed -n 's/.*127.0.0.1:\([0-9]*\).*/\1/p' "$log" | head -1) && break
    sleep 0.1
  done
  [[ -n "$started_port" ]] || fail "the server did not start: $(cat "$log")"
}
start "$work/serve.log" --api-key-file "$work/keys"
pid=$started_pid port=$started_port
start "$work/serve2.log" --rate-limit 0.2 --burst 2 --client-address-header X-Real-IP
pid2=$started_pid port2=$started_port

# nginx as root or not: everything it writes lives in $work.
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
tls_port=$(free_port)
tls_port2=$(free_port)
mkdir -p "$work/nginx"
cat > "$work/nginx.conf" <<EOF
worker_processes 1;
pid $work/nginx.pid;
error_log $work/error.log warn;
$( [[ $(id -u) -eq 0 ]] && echo "user root;" )
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path $work/nginx/body;
  proxy_temp_path $work/nginx/proxy;
  fastcgi_temp_path $work/nginx/fastcgi;
  uwsgi_temp_path $work/nginx/uwsgi;
  scgi_temp_path $work/nginx/scgi;
  # Slow clients are the proxy's to time out; bodies over sieve's --max-body it refuses itself.
  client_header_timeout 10s;
  client_body_timeout 10s;
  client_max_body_size 16m;
  upstream sieve { server 127.0.0.1:$port; keepalive 16; }
  upstream limited { server 127.0.0.1:$port2; keepalive 16; }
  ssl_certificate $work/cert.pem;
  ssl_certificate_key $work/key.pem;
  ssl_protocols TLSv1.2 TLSv1.3;
  proxy_http_version 1.1;
  proxy_set_header Connection "";
  proxy_set_header X-Real-IP \$remote_addr;
  proxy_read_timeout 60s;
  server {
    listen 127.0.0.1:$tls_port ssl;
    location / { proxy_pass http://sieve; }
  }
  server {
    listen 127.0.0.1:$tls_port2 ssl;
    location / { proxy_pass http://limited; }
  }
}
EOF
"$NGINX" -c "$work/nginx.conf" -p "$work/nginx" -g 'daemon off;' 2>> "$work/error.log" &
npid=$!
for _ in $(seq 100); do curl -s --cacert "$work/cert.pem" "https://127.0.0.1:$tls_port/health" > /dev/null && break; sleep 0.1; done

https="https://127.0.0.1:$tls_port"
plain="http://127.0.0.1:$port"
call() { curl -s --cacert "$work/cert.pem" "$@"; }
# 1. Answers through TLS equal the server's own, byte for byte.
[[ "$(call "$https/health")" == "$(curl -s "$plain/health")" ]] || fail "/health differs"
body='{"input": ["the dog bit the man", "the man bit the dog"]}'
a=$(call -H "Authorization: Bearer admin1" -H 'Content-Type: application/json' -d "$body" "$https/v1/embeddings")
b=$(curl -s -H "Authorization: Bearer admin1" -H 'Content-Type: application/json' -d "$body" "$plain/v1/embeddings")
[[ -n "$a" && "$a" == "$b" ]] || fail "/v1/embeddings through TLS differs: ${a:0:200} vs ${b:0:200}"
echo "tls: /v1/embeddings through nginx equals the direct answer (${#a} bytes)"
# 2. The certificate is checked, plain HTTP on the TLS port is refused, keys hold through the proxy.
if curl -s "$https/health" > /dev/null; then fail "curl accepted the self-signed certificate without --cacert"; fi
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$tls_port/health" || true)
[[ "$code" == "400" ]] || fail "plain HTTP to the TLS port answered $code (nginx answers 400)"
code=$(call -o /dev/null -w '%{http_code}' -d '{"query": "dog"}' "$https/v1/search")
[[ "$code" == "401" ]] || fail "a search without a key through the proxy: $code"
code=$(call -o /dev/null -w '%{http_code}' -H "Authorization: Bearer r1" -d '{"documents": [{"_id": "x", "text": "y"}]}' "$https/v1/documents")
[[ "$code" == "403" ]] || fail "a read key adding documents through the proxy: $code"
# 3. Per-address limits see the client, not the proxy: 127.0.0.2 spends its burst of 2 and is
# refused; 127.0.0.3 is not.
search() { call --interface "$1" -o "$work/out" -D "$work/headers" -w '%{http_code}' \
  -H 'Content-Type: application/json' -d '{"query": "dog bites man", "k": 2}' "https://127.0.0.1:$tls_port2/v1/search"; }
[[ "$(search 127.0.0.2)" == "200" ]] || fail "first search from 127.0.0.2: $(cat "$work/out")"
direct=$(curl -s -H "Authorization: Bearer admin1" -H 'Content-Type: application/json' -d '{"query": "dog bites man", "k": 2}' "$plain/v1/search")
[[ "$(jq -c '[.results[0].hits[].id]' "$work/out")" == "$(echo "$direct" | jq -c '[.results[0].hits[].id]')" ]] || fail "search hits differ"
[[ "$(search 127.0.0.2)" == "200" ]] || fail "second search from 127.0.0.2: $(cat "$work/out")"
[[ "$(search 127.0.0.2)" == "429" ]] || fail "third search from 127.0.0.2 was not limited: $(cat "$work/out")"
grep -qi '^Retry-After: [0-9]' "$work/headers" || fail "the 429 has no Retry-After: $(cat "$work/headers")"
jq -e '.error.type == "rate_limited"' "$work/out" > /dev/null || fail "the 429's body: $(cat "$work/out")"
[[ "$(search 127.0.0.3)" == "200" ]] || fail "127.0.0.3 was limited with 127.0.0.2: $(cat "$work/out")"
echo "tls: per-address limits through the proxy: 127.0.0.2 limited after its burst, 127.0.0.3 not"
kill -0 "$pid" && kill -0 "$pid2" || fail "a server died"
echo "tls: passed (nginx $("$NGINX" -v 2>&1 | sed 's/.*\///'), TLS on 127.0.0.1:$tls_port)"
