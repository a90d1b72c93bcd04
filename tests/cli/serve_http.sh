# tests/cli/serve_http.sh: `ltrun serve` reads a request's head strictly, as a server behind a
# proxy must (issue 43 item 6; server.h head_problem): a head that a proxy could read otherwise
# than the server does is a 400 naming what is wrong, and its connection ends after it, so that
# nothing after it on the socket is taken for a request. Raw bytes over a socket (curl would
# tidy them). Before: two Host headers, `Host :` and two different Content-Lengths were all
# answered 200, and a GET's body was read as a second request (smuggled past a proxy).
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$here/cli/common.bash"
trap "" PIPE

"$LTRUN" --log -e 'lt.run.log("loss", 1, 1)' 2>/dev/null
"$LTRUN" serve --port 0 >serve.out 2>serve.err & pid=$!
url=""
for _ in $(seq 1 100); do
  url=$(grep -o 'http://[^ ]*' serve.out 2>/dev/null | head -1)
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || { cat serve.out serve.err >&2; echo "server did not start" >&2; exit 1; }
port=${url##*:}; port=${port%/}

# raw HEAD-AND-BODY: sends the bytes (printf's escapes) on a fresh connection and prints all the
# server answers until it closes the connection (at most 10 s: a server that keeps it open for
# more would leave the check below without its answer)
raw() {
  exec 3<>"/dev/tcp/127.0.0.1/$port"
  printf "$1" >&3 2>/dev/null
  timeout 10 cat <&3
  exec 3<&-
}
# answers TEXT: how many responses TEXT holds
answers() { grep -o 'HTTP/1.1 [0-9][0-9][0-9]' <<<"$1" | wc -l; }

# the control: a plain request is answered, a pipelined second one too
out=$(raw 'GET /api/info HTTP/1.1\r\nHost: localhost\r\n\r\nGET /api/info HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n')
check "a plain request: 200" contains "$out" "HTTP/1.1 200"
check "... and the pipelined one after it: two answers" equals "$(answers "$out")" "2"

# refused REASON HEAD: a 400 naming REASON, one answer, the connection closed after it (raw
# returned before its 10 s), whatever follows the head
refused() {
  local why=$1 head=$2 start=$SECONDS
  local out; out=$(raw "$head")
  check "$why: 400" contains "$out" "HTTP/1.1 400"
  check "$why: saying why" contains "$out" "\"error\":\"bad request: $why"
  check "$why: one answer, nothing after it taken for a request" equals "$(answers "$out")" "1"
  check "$why: the connection closed at once" test $((SECONDS - start)) -lt 5
}
next='GET /api/queries HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n'
refused "two Host headers" 'GET /api/info HTTP/1.1\r\nHost: localhost\r\nHost: evil.example\r\n\r\n'"$next"
refused "two Host headers" 'GET /api/info HTTP/1.1\r\nHost: localhost\r\nhost: localhost\r\n\r\n'"$next"
refused "header name 'Host ' is not a token" 'GET /api/info HTTP/1.1\r\nHost : localhost\r\n\r\n'"$next"
refused "header name 'Host ' is not a token" 'GET /api/info HTTP/1.1\r\nHost: localhost\r\nHost : evil.example\r\n\r\n'"$next"
refused "header name 'X-A?B' is not a token" 'GET /api/info HTTP/1.1\r\nHost: localhost\r\nX-A\tB: 1\r\n\r\n'"$next"
refused "two different Content-Length headers" \
  'GET /api/info HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\nContent-Length: 5\r\n\r\nhello'"$next"
refused "two different Content-Length headers" \
  'POST /api/info HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\nContent-Length: 45\r\n\r\nhello'"$next"
refused "two Content-Length headers" 'GET /api/info HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\nContent-Length: 0\r\n\r\n'"$next"
refused "Content-Length '-1' is not a number" 'GET /api/info HTTP/1.1\r\nHost: localhost\r\nContent-Length: -1\r\n\r\n'"$next"
refused "a Transfer-Encoding header" \
  'GET /api/info HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'"$next"
# a GET whose body is a request: a proxy sees one request, the server (before) answered two
smuggled='GET /api/queries HTTP/1.1\r\nHost: localhost\r\n\r\n'
refused "a GET with a body (Content-Length 46)" \
  "GET /api/info HTTP/1.1\\r\\nHost: localhost\\r\\nContent-Length: 46\\r\\n\\r\\n$smuggled$next"
# what cpp-httplib drops or rewrites while parsing, seen in the head's own bytes: a line without
# a colon, a folded line, a bare LF, a control character, an empty Host beside another, a '%' in
# Host (decoded: local%68ost was localhost) or in Content-Length (%35 was 5); all were answered
refused "a header line without a colon" 'GET /api/info HTTP/1.1\r\nHost: localhost\r\nGarbage line\r\n\r\n'"$next"
refused "a folded header line (obs-fold)" 'GET /api/info HTTP/1.1\r\nHost: localhost\r\nX-A: 1\r\n  folded\r\n\r\n'"$next"
refused "a line that ends in a bare LF" 'GET /api/info HTTP/1.1\r\nHost: localhost\r\nX-A: 1\nHost: evil.example\r\n\r\n'"$next"
refused "a control character in a header line" 'GET /api/info HTTP/1.1\r\nHost: local\0host\r\n\r\n'"$next"
refused "two Host headers" 'GET /api/info HTTP/1.1\r\nHost:\r\nHost: localhost\r\n\r\n'"$next"
refused "a '%' in the Host header" 'GET /api/info HTTP/1.1\r\nHost: local%%68ost\r\n\r\n'"$next"
refused "Content-Length '%35' is not a number" 'POST /api/info HTTP/1.1\r\nHost: localhost\r\nContent-Length: %%35\r\n\r\nhello'"$next"
# a request line cpp-httplib cannot read: its 400, once, and the connection ends (before: a
# 400 for each line that followed, until the connection had idled 5 s)
for line in 'get /api/info HTTP/1.1' 'GET /api/info HTTP/2.0' 'GET /api/info'; do
  start=$SECONDS
  out=$(raw "$line"'\r\nHost: localhost\r\nX-A: 1\r\n\r\n'"$next")
  check "'$line': 400" contains "$out" "HTTP/1.1 400"
  check "'$line': one answer" equals "$(answers "$out")" "1"
  check "'$line': the connection closed at once" test $((SECONDS - start)) -lt 5
done
out=$(raw 'OPTIONS /api/info HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n')
check "OPTIONS: 405 as other methods (before: 404)" contains "$out" "HTTP/1.1 405"

# and the server still answers
check "still serving" equals "$(curl -s -o /dev/null -w '%{http_code}' "${url}api/info")" "200"
kill -INT $pid; wait $pid
finish
