// runtime/serve/server.cpp: the HTTP side of `ltrun serve` (see server.h), on cpp-httplib.
// cpp-httplib's own connection handling gives a fixed pool of threads to whoever connects
// first and waits per read, not per request: a few sockets that never finish a request held
// every thread. Here each connection gets a thread of its own (up to kMaxConnections), a
// request must arrive within kIdleWait and be read within kRequestRead in all, and a client
// (remote address) keeps at most kWaitingPerClient connections waiting for a request: a
// newer one closes its oldest. Past kMaxPerClient connections of one client, a new one closes
// the client's oldest that is waiting or stuck writing (slow readers from 127.0.0.1 never
// starve a fresh request from there). Memory: a few heavy requests at a time (HeavyGate; more
// wait a little, then get 503 with Retry-After), each answer bounded (api.cpp's read budget,
// kMaxAnswerBytes here) and sent in chunks, every write with a deadline; malloc_trim once the
// last heavy request is sent, so that what they took goes back to the system.
#include "runtime/serve/server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <malloc.h>

// cpp-httplib's API as of 0.41 (Debian sid, scripts/check-torch2) beside 0.11 (bookworm, GPU
// nodes via .device): TaskQueue::enqueue returns bool, Stream waits by wait_readable /
// wait_writable, process_request takes the addresses. 0.11 defines no CPPHTTPLIB_VERSION_NUM.
#ifdef CPPHTTPLIB_VERSION_NUM
#define LTRUN_HTTPLIB_041 1
#else
#define LTRUN_HTTPLIB_041 0
#endif
#include <nlohmann/json.hpp>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <thread>

#include "runtime/core/error.h"
#include "runtime/core/interrupt.h"
#include "runtime/serve/api.h"

namespace ltrun::serve {
namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kIdleWait = std::chrono::seconds(5);     // for the first byte of the next request
constexpr auto kRequestRead = std::chrono::seconds(5);  // for the rest of it, in all
constexpr auto kWriteWait = std::chrono::seconds(10);   // for each write to make progress
constexpr auto kResponseWrite = std::chrono::seconds(60);  // for all of one response
constexpr size_t kMaxHeadBytes = 64 * 1024;             // request line and headers
constexpr size_t kMaxPayload = 64 * 1024;               // a body (only GET is served)
constexpr size_t kMaxConnections = 128;                 // threads; more connections queue
constexpr size_t kMaxPerClient = 64;                    // connections of one remote address
constexpr size_t kWaitingPerClient = 16;                // ... of which waiting for a request
constexpr int64_t kSqliteHeapBytes = int64_t(512) << 20;
constexpr size_t kMaxHeavy = 4;                         // heavy requests at once (heavy_route)
constexpr size_t kHeavyQueue = 8;                       // ... waiting for one of them; more: 503
constexpr auto kHeavyWait = std::chrono::seconds(10);   // ... at most this long
constexpr size_t kMaxAnswerBytes = size_t(64) << 20;    // a body past it: 413
constexpr size_t kStreamAbove = 256 * 1024;             // a body past it goes out in chunks
constexpr size_t kChunk = 64 * 1024;
constexpr auto kStopWait = std::chrono::seconds(5);     // for requests in flight at SIGTERM

// A request refused for its head (head_problem) ends its connection after the 400: what follows
// it on the socket (a body it declared, or one it smuggles) is never read as a request. Set by
// the pre-routing handler, read by the connection's loop, both on the connection's thread.
thread_local bool t_close_after_answer = false;
// what raw_head_problem found in the head as it came over the socket ("" nothing), for the
// pre-routing handler of the same request, on the same thread
thread_local std::string t_raw_head_problem;

// What the head's bytes show and the parsed headers no longer do ("" when nothing): cpp-httplib
// skips a line without a colon, a folded line, a line ending in a bare LF and a header with an
// empty value (so `Host:` beside `Host: x` was one Host), and %-decodes values (`Content-Length:
// %35` was 5). RFC 9112 section 5: a server rejects them.
std::string raw_head_problem(const std::string& head) {
  size_t hosts = 0;
  for (size_t at = 0, n = 0; at < head.size(); n++) {
    const size_t nl = head.find('\n', at);
    if (nl == std::string::npos) break;
    if (nl == at || head[nl - 1] != '\r') return "a line that ends in a bare LF";
    const std::string line = head.substr(at, nl - 1 - at);
    at = nl + 1;
    if (n == 0) continue;  // the request line: cpp-httplib's to judge
    if (line.empty()) break;
    if (line[0] == ' ' || line[0] == '\t') return "a folded header line (obs-fold)";
    for (char c : line)
      if (((unsigned char)c < 0x20 && c != '\t') || c == 0x7f) return "a control character in a header line";
    const size_t colon = line.find(':');
    if (colon == std::string::npos) return "a header line without a colon";
    std::string name = line.substr(0, colon), value = line.substr(colon + 1);
    for (char& c : name) c = char(std::tolower((unsigned char)c));
    const size_t b = value.find_first_not_of(" \t"), e = value.find_last_not_of(" \t");
    value = b == std::string::npos ? "" : value.substr(b, e - b + 1);
    if (name == "host" && ++hosts > 1) return "two Host headers";
    if (name == "host" && value.find('%') != std::string::npos) return "a '%' in the Host header";
    if (name == "content-length" && (value.empty() || value.find_first_not_of("0123456789") != std::string::npos))
      return fmt::format("Content-Length '{}' is not a number", value.substr(0, 40));
  }
  return "";
}

const char* content_type(const std::string& path) {
  auto ends = [&](const char* e) {
    const size_t n = std::strlen(e);
    return path.size() >= n && path.compare(path.size() - n, n, e) == 0;
  };
  if (ends(".html")) return "text/html; charset=utf-8";
  if (ends(".js")) return "text/javascript; charset=utf-8";
  if (ends(".css")) return "text/css; charset=utf-8";
  return "text/plain; charset=utf-8";
}

void send(httplib::Response& res, const Response& r) {
  res.status = r.status;
  for (const auto& [k, v] : r.headers) res.set_header(k, v);
  res.set_content(r.body, r.content_type);
}

// poll() until `deadline`: readable (or closed) / writable
bool wait_for(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, int(std::min<long long>(left, 1000 * 1000)));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return false;
  }
}

std::string address(int fd, bool peer, int* port = nullptr) {
  sockaddr_storage sa{};
  socklen_t len = sizeof sa;
  const int rc = peer ? ::getpeername(fd, reinterpret_cast<sockaddr*>(&sa), &len)
                      : ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  char host[NI_MAXHOST] = "", serv[NI_MAXSERV] = "";
  if (rc != 0 || ::getnameinfo(reinterpret_cast<sockaddr*>(&sa), len, host, sizeof host, serv, sizeof serv,
                               NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return "";
  if (port) *port = std::atoi(serv);
  return host;
}

// The connections being served, so that one waiting for a request (or stuck sending its
// answer) can be closed from another thread (shutdown(); its own thread then sees the end and
// closes the socket).
class Connections {
 public:
  enum class State { waiting, handling, writing };  // for a request / reading+answering it / sending
  struct Conn {
    int fd;
    std::string client;
    State state = State::waiting;
    bool closed = false;  // shut down by evict() or stop()
    Clock::time_point since;  // of the state
  };

  // nullptr: refused (the client holds kMaxPerClient connections that are all busy answering,
  // or the server stops)
  std::shared_ptr<Conn> open(int fd, const std::string& client) {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return nullptr;
    size_t mine = 0, waiting = 0;
    for (const auto& c : conns_)
      if (!c->closed && c->client == client) mine++, waiting += c->state == State::waiting;
    for (; waiting >= kWaitingPerClient; waiting--, mine--) evict_locked(&client);
    // its slow readers (an answer it does not read) make room rather than refusing it
    for (; mine >= kMaxPerClient && evict_locked(&client); mine--) {}
    if (mine >= kMaxPerClient) return nullptr;
    auto c = std::make_shared<Conn>(Conn{fd, client, State::waiting, false, Clock::now()});
    conns_.push_back(c);
    return c;
  }
  void set_state(Conn& c, State s) {
    std::lock_guard<std::mutex> lock(mu_);
    if (c.closed) return;
    c.state = s;
    c.since = Clock::now();
  }
  bool closed(const Conn& c) {
    std::lock_guard<std::mutex> lock(mu_);
    return c.closed;
  }
  // before its thread closes the socket
  void remove(const std::shared_ptr<Conn>& c) {
    std::lock_guard<std::mutex> lock(mu_);
    conns_.remove(c);
  }
  // closes the connection that has waited longest for a request (of `client`, or of anyone),
  // else the one that has been sending its answer longest; false: none was
  bool evict(const std::string* client) {
    std::lock_guard<std::mutex> lock(mu_);
    return evict_locked(client);
  }
  void stop() {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    for (auto& c : conns_) shut(*c);
  }

 private:
  void shut(Conn& c) {
    if (!c.closed) ::shutdown(c.fd, SHUT_RDWR);
    c.closed = true;
  }
  bool evict_locked(const std::string* client) {
    for (State s : {State::waiting, State::writing}) {
      Conn* oldest = nullptr;
      for (auto& c : conns_)
        if (c->state == s && !c->closed && (!client || c->client == *client) && (!oldest || c->since < oldest->since))
          oldest = c.get();
      if (oldest) {
        shut(*oldest);
        return true;
      }
    }
    return false;
  }

  std::mutex mu_;
  std::list<std::shared_ptr<Conn>> conns_;
  bool stopping_ = false;
};

// Heavy requests (api.h heavy_route) at most kMaxHeavy at a time, from handling until their
// answer is sent; up to kHeavyQueue more wait up to kHeavyWait for a turn. When the last one
// ends, malloc_trim gives the memory they took back to the system (glibc keeps freed memory
// of its arenas otherwise: 2.3 GB after 16 compares).
class HeavyGate {
 public:
  // held for as long as the answer is in flight; nullptr: none to be had (503)
  std::shared_ptr<void> enter() {
    std::unique_lock<std::mutex> lock(mu_);
    if (stopping_ || waiting_ >= kHeavyQueue) return nullptr;
    waiting_++;
    const bool got = cv_.wait_for(lock, kHeavyWait, [&] { return stopping_ || busy_ < kMaxHeavy; }) && !stopping_;
    waiting_--;
    if (!got) return nullptr;
    busy_++;
    return std::shared_ptr<void>(this, [](HeavyGate* g) { g->leave(); });
  }
  void stop() {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  ~HeavyGate() {  // permits may outlive the server in threads it gave up on (serve's stop)
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait_for(lock, kStopWait, [&] { return busy_ == 0; });
  }

 private:
  void leave() {
    bool last;
    {
      std::lock_guard<std::mutex> lock(mu_);
      last = --busy_ == 0;
      cv_.notify_one();
      done_.notify_all();
    }
    if (last) ::malloc_trim(0);
  }
  std::mutex mu_;
  std::condition_variable cv_, done_;
  size_t busy_ = 0, waiting_ = 0;
  bool stopping_ = false;
};

// cpp-httplib's task queue: a thread per connection, at most kMaxConnections; past that a
// connection waits for a thread, and the connection that has waited longest for a request is
// closed to free one.
class ConnectionThreads : public httplib::TaskQueue {
 public:
  explicit ConnectionThreads(Connections& conns) : conns_(conns) {}
#if LTRUN_HTTPLIB_041
  bool enqueue(std::function<void()> fn) override {
    add(std::move(fn));
    return true;
  }
#else
  void enqueue(std::function<void()> fn) override { add(std::move(fn)); }
#endif
  void add(std::function<void()> fn) {
    std::unique_lock<std::mutex> lock(mu_);
    if (running_ < kMaxConnections) {
      running_++;
      try {
        std::thread([this, fn]() mutable { run(std::move(fn)); }).detach();
        return;
      } catch (const std::system_error&) {  // no thread to be had: serve it from this one
        running_--;
        lock.unlock();
        fn();
        return;
      }
    }
    queue_.push_back(std::move(fn));
    lock.unlock();
    conns_.evict(nullptr);  // a connection waiting for a request, else one stuck sending
  }
  // Waits kStopWait for the requests in flight (their queries are cancelled: Api::stop); one
  // still running then (a loop in C++) does not hold up SIGTERM: the process ends here.
  void shutdown() override {
    conns_.stop();
    std::unique_lock<std::mutex> lock(mu_);
    if (done_.wait_for(lock, kStopWait, [&] { return running_ == 0; })) return;
    std::fprintf(stderr, "ltrun serve: %zu request(s) still running %lld s after the stop; ending without them\n",
                 running_, (long long)std::chrono::duration_cast<std::chrono::seconds>(kStopWait).count());
    std::fflush(nullptr);
    std::_Exit(0);
  }

 private:
  void run(std::function<void()> fn) {
    for (;;) {
      fn();
      std::unique_lock<std::mutex> lock(mu_);
      if (queue_.empty()) {
        running_--;
        std::notify_all_at_thread_exit(done_, std::move(lock));  // `this` may go once notified
        return;
      }
      fn = std::move(queue_.front());
      queue_.pop_front();
    }
  }

  Connections& conns_;
  std::mutex mu_;
  std::condition_variable done_;
  std::deque<std::function<void()>> queue_;
  size_t running_ = 0;
};

// The reading side of a connection, one request at a time: the reads of a request share one
// deadline, and its request line with headers is at most kMaxHeadBytes, so a client that sends
// a byte at a time (or an endless header) cannot hold its thread. Bytes read past a request
// (the next one, pipelined) stay for the next.
class RequestStream : public httplib::Stream {
 public:
  // on_write: called at the first write of each response
  RequestStream(int fd, std::function<void()> on_write) : fd_(fd), on_write_(std::move(on_write)) {}
  // false: nothing of a next request came within `idle`
  bool next_request(Clock::duration idle) {
    if (pos_ == len_ && !wait_for(fd_, POLLIN, Clock::now() + idle)) return false;
    deadline_ = Clock::now() + kRequestRead;
    head_read_ = false;
    head_.clear();
    head_bytes_ = len_ - pos_;
    line_read_ = std::memchr(buf_ + pos_, '\n', len_ - pos_) != nullptr;
    written_ = 0;
    return true;
  }
  void head_read() { head_read_ = true; }
  const std::string& head() const { return head_; }  // the bytes read before head_read()
  bool cut_off() const { return cut_off_; }  // a read hit the deadline or the head's size limit
  bool head_too_long() const { return head_too_long_; }  // ... the size limit
  bool line_read() const { return line_read_; }  // the request line was read in full
  size_t written() const { return written_; }  // bytes of this response

#if LTRUN_HTTPLIB_041
  bool is_readable() const override { return pos_ < len_; }
  bool wait_readable() const override { return readable(); }
  bool wait_writable() const override { return writable(); }
  time_t duration() const override { return 0; }
#else
  bool is_readable() const override { return readable(); }
  bool is_writable() const override { return writable(); }
#endif
  bool readable() const { return pos_ < len_ || wait_for(fd_, POLLIN, deadline_); }
  // each write makes progress within kWriteWait, and a response is sent within kResponseWrite
  bool writable() const {
    return wait_for(fd_, POLLOUT, written_ ? std::min(Clock::now() + kWriteWait, write_deadline_) : Clock::now() + kWriteWait);
  }
  ssize_t read(char* ptr, size_t size) override {
    if (pos_ == len_) {
      const bool too_long = !head_read_ && head_bytes_ >= kMaxHeadBytes;
      if (too_long || !wait_for(fd_, POLLIN, deadline_)) {
        cut_off_ = true;
        head_too_long_ = too_long;
        return -1;
      }
      ssize_t n;
      do n = ::recv(fd_, buf_, sizeof buf_, 0);
      while (n < 0 && errno == EINTR);
      if (n <= 0) return n;
      pos_ = 0;
      len_ = size_t(n);
      if (!head_read_) head_bytes_ += len_;
      if (!line_read_) line_read_ = std::memchr(buf_, '\n', len_) != nullptr;
    }
    const size_t n = std::min(size, len_ - pos_);
    std::memcpy(ptr, buf_ + pos_, n);
    if (!head_read_ && head_.size() < kMaxHeadBytes) head_.append(buf_ + pos_, n);
    pos_ += n;
    return ssize_t(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    if (written_ == 0) {
      write_deadline_ = Clock::now() + kResponseWrite;
      if (on_write_) on_write_();
    }
    if (!writable()) return -1;
    ssize_t n;
    do n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    if (n > 0) written_ += size_t(n);
    return n;
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override { ip = address(fd_, true, &port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { ip = address(fd_, false, &port); }
  socket_t socket() const override { return fd_; }

 private:
  int fd_;
  std::function<void()> on_write_;
  Clock::time_point deadline_{}, write_deadline_{};
  bool head_read_ = false, cut_off_ = false, head_too_long_ = false, line_read_ = false;
  size_t head_bytes_ = 0, written_ = 0;
  std::string head_;
  char buf_[4096];
  size_t pos_ = 0, len_ = 0;
};

class Server : public httplib::Server {
 public:
  Server() {
    new_task_queue = [this] { return new ConnectionThreads(conns_); };
  }
  // cpp-httplib listens with a backlog of 5: a burst of connections would wait for SYN retries
  void widen_backlog() { ::listen(svr_sock_, SOMAXCONN); }

 private:
  // replaces cpp-httplib's (process_server_socket with per-read timeouts)
  bool process_and_close_socket(socket_t sock) override {
    bool ret = false;
    tune_connection(sock);
    if (auto conn = conns_.open(sock, address(sock, true))) {
      using State = Connections::State;
      RequestStream strm(sock, [&] { conns_.set_state(*conn, State::writing); });
      for (size_t left = keep_alive_max_count_; left > 0 && svr_sock_ != INVALID_SOCKET; left--) {
        conns_.set_state(*conn, State::waiting);
        if (conns_.closed(*conn) || !strm.next_request(kIdleWait)) break;
        bool closed = false, parsed = false;
        const auto setup = [&](httplib::Request&) {  // (a client slow to send its request still waits)
          conns_.set_state(*conn, State::handling);
          strm.head_read();
          t_raw_head_problem = raw_head_problem(strm.head());
          parsed = true;
        };
#if LTRUN_HTTPLIB_041
        int remote_port = 0, local_port = 0;
        const std::string remote = address(sock, true, &remote_port), local = address(sock, false, &local_port);
        ret = process_request(strm, remote, remote_port, local, local_port, left == 1, closed, setup);
#else
        ret = process_request(strm, left == 1, closed, setup);
#endif
        // a request line or head past kMaxHeadBytes: cpp-httplib's read failed and it closes
        // without a word (0.11 and 0.41 alike); the client learns why
        if (strm.head_too_long() && strm.written() == 0) too_long_answer(strm, strm.line_read());
        // a request refused for its head, or one cpp-httplib could not read (its 400): nothing
        // after it on this connection is taken for a request
        if (t_close_after_answer || !parsed) {
          t_close_after_answer = false;
          break;
        }
        if (!ret || closed || strm.cut_off()) break;  // after a 400 for a request cut off: no more
      }
      conns_.remove(conn);
    }
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    return ret;
  }

  static void too_long_answer(RequestStream& strm, bool line_read) {
    const std::string body = line_read
        ? R"({"error": "request headers over 64 KB"})"
        : R"x({"error": "request line over 64 KB (many run ids go as ranges: ids=10-2000)"})x";
    const std::string head = fmt::format(
        "HTTP/1.1 {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        line_read ? "431 Request Header Fields Too Large" : "414 URI Too Long", body.size());
    const std::string all = head + body;
    for (size_t at = 0; at < all.size();) {
      const ssize_t n = strm.write(all.data() + at, all.size() - at);
      if (n <= 0) break;
      at += size_t(n);
    }
  }

  Connections conns_;
};

// cpp-httplib's default socket options set SO_REUSEPORT, with which a second server binds the
// same port and the kernel splits connections between the two (two stores behind one URL).
// SO_REUSEADDR alone still allows a restart while old connections linger in TIME_WAIT, but
// not two listeners.
void exclusive_socket_options(socket_t sock) {
  int yes = 1;
  ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
}

// why host:port cannot be bound (errno's words), found by binding a socket of our own the same way
std::string bind_problem(const std::string& host, int port) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  if (const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res); rc != 0)
    return ::gai_strerror(rc);
  std::string why = "the system refused it";
  for (addrinfo* a = res; a; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0) {
      why = std::strerror(errno);
      continue;
    }
    exclusive_socket_options(fd);
    const int rc = ::bind(fd, a->ai_addr, a->ai_addrlen);
    const int err = errno;
    ::close(fd);
    if (rc != 0) {
      why = err == EADDRINUSE ? "port " + std::to_string(port) + " is in use (another ltrun serve?)" : std::strerror(err);
      break;
    }
  }
  ::freeaddrinfo(res);
  return why;
}

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower((unsigned char)c));
  return s;
}

}  // namespace

std::string head_problem(const std::string& method, const std::vector<std::pair<std::string, std::string>>& headers) {
  constexpr const char* kToken = "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  size_t hosts = 0;
  std::string length;
  bool has_length = false;
  for (const auto& [name, value] : headers) {
    if (name.empty() || name.find_first_not_of(kToken) != std::string::npos) {
      std::string shown;
      for (char c : name) shown += (unsigned char)c < 0x20 || (unsigned char)c >= 0x7f ? '?' : c;
      return fmt::format("header name '{}' is not a token (whitespace before the colon, or a character a name cannot "
                         "hold)", shown);
    }
    const std::string n = lower(name);
    if (n == "host" && ++hosts > 1) return "two Host headers";
    if (n == "transfer-encoding") return "a Transfer-Encoding header (ltrun serve takes no request body)";
    if (n == "content-length") {
      if (has_length) return value == length ? "two Content-Length headers" : "two different Content-Length headers";
      if (value.empty() || value.size() > 18 || value.find_first_not_of("0123456789") != std::string::npos)
        return fmt::format("Content-Length '{}' is not a number", value.substr(0, 40));
      has_length = true;
      length = value;
    }
  }
  if ((method == "GET" || method == "HEAD") && has_length && std::stoll(length) != 0)
    return "a GET with a body (Content-Length " + length + ")";
  return "";
}


void tune_connection(int fd) {
  int yes = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
}

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

bool valid_host_name(const std::string& name) {
  return !name.empty() && name.size() <= 253 &&
         name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._") ==
             std::string::npos;
}

bool host_allowed(const std::string& header, const std::vector<std::string>& allowed) {
  std::string name = header, port;
  if (!name.empty() && name[0] == '[') {  // [IPv6]:port
    const size_t close = name.find(']');
    if (close == std::string::npos) return false;
    port = name.substr(close + 1);
    name = name.substr(1, close - 1);
    in6_addr a6{};
    if (::inet_pton(AF_INET6, name.c_str(), &a6) != 1) return false;
  } else if (const size_t colon = name.find(':'); colon != std::string::npos) {
    port = name.substr(colon);
    name = name.substr(0, colon);
  }
  if (!port.empty() && (port.size() < 2 || port[0] != ':' || port.size() > 6 ||
                        port.find_first_not_of("0123456789", 1) != std::string::npos))
    return false;
  if (!header.empty() && header[0] == '[') return true;  // an IPv6 address
  in_addr a4{};
  if (::inet_pton(AF_INET, name.c_str(), &a4) == 1) return true;
  name = lower(name);
  if (name == "localhost") return true;
  for (const auto& a : allowed)
    if (!name.empty() && lower(a) == name) return true;
  return false;
}

void serve(const Options& o, const std::function<void(const std::string&)>& on_listening) {
  auto reader = std::make_shared<Reader>(o.db);
  limit_sqlite_heap(kSqliteHeapBytes);
  // a thread per connection, and glibc an arena per thread: fewer arenas, less memory kept
  ::mallopt(M_ARENA_MAX, 4);
  Api api(reader, o.sql_timeout_ms, o.request_bytes, std::make_shared<MemoryBudget>(o.memory_bytes));
  Server svr;
  svr.set_socket_options(exclusive_socket_options);
  svr.set_default_headers({{"Cache-Control", "no-store"}});
  svr.set_payload_max_length(kMaxPayload);
  // DNS rebinding: a page of evil.example whose name now points at 127.0.0.1 sends
  // `Host: evil.example`; only names that cannot be rebound (and --allow-host's) are answered
  std::vector<std::string> names = o.allow_hosts;
  if (valid_host_name(o.host)) names.push_back(o.host);  // --host myhost.lan: its own name
  svr.set_pre_routing_handler([names](const httplib::Request& req, httplib::Response& res) {
    // a head a proxy before this server could read otherwise than it does: 400, and the
    // connection ends after it
    const std::string problem = !t_raw_head_problem.empty() ? t_raw_head_problem
        : head_problem(req.method, std::vector<std::pair<std::string, std::string>>(req.headers.begin(), req.headers.end()));
    if (!problem.empty()) {
      Response r;
      r.status = 400;
      r.headers = {{"Connection", "close"}};
      r.body = nlohmann::json{{"error", "bad request: " + problem}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      send(res, r);
      t_close_after_answer = true;
      return httplib::Server::HandlerResponse::Handled;
    }
    const std::string host = req.get_header_value("Host");
    if (host_allowed(host, names)) return httplib::Server::HandlerResponse::Unhandled;
    Response r;
    r.status = 403;
    const std::string shown = host.empty() ? "no Host header" : "Host '" + host + "'";
    r.body = nlohmann::json{{"error", shown + " is refused: ltrun serve answers requests for localhost, an IP "
                                      "address or a name given with --allow-host (a guard against DNS rebinding)"}}
                 .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    send(res, r);
    return httplib::Server::HandlerResponse::Handled;
  });
  for (const auto& f : ui_files()) {
    const std::string path = f.path, text = f.text;
    const std::string route = path == "index.html" ? "/" : "/" + path;
    svr.Get(route, [text, path](const httplib::Request&, httplib::Response& res) {
      res.set_content(text, content_type(path));
    });
  }
  HeavyGate heavy;
  svr.Get(R"(/api/.*)", [&api, &heavy](const httplib::Request& req, httplib::Response& res) {
    const auto busy = [&res] {
      Response r;
      r.status = 503;
      r.headers = {{"Retry-After", "2"}};
      r.body = fmt::format(R"({{"error": "busy: {} heavy requests are running and {} waiting; try again in a moment"}})",
                           kMaxHeavy, kHeavyQueue);
      send(res, r);
    };
    std::shared_ptr<void> permit;
    if (heavy_route(req.path) && !(permit = heavy.enter())) return busy();
    auto r = std::make_shared<Response>(api.get(req.path, Params(req.params.begin(), req.params.end())));
    // a large answer of a light route (a run's page with a long script) is sent as a heavy one
    if (!permit && r->body.size() > kStreamAbove && !(permit = heavy.enter())) return busy();
    if (r->body.size() > kMaxAnswerBytes) {
      const size_t mb = r->body.size() >> 20;
      *r = Response{};
      r->status = 413;
      r->body = fmt::format(R"x({{"error": "the answer would be {} MB, past the {} MB an answer may have here; ask for less )x"
                            R"x((a smaller limit= or points=, fewer runs or names)"}})x", mb, kMaxAnswerBytes >> 20);
    }
    if (r->body.size() <= kStreamAbove) {
      send(res, *r);
      return;
    }
    // a large body goes out in chunks from this one copy (no compressed copy beside it); the
    // permit is held until it is sent or the client is given up on
    res.status = r->status;
    for (const auto& [k, v] : r->headers) res.set_header(k, v);
    const size_t size = r->body.size();
    const std::string type = r->content_type;
    res.set_content_provider(
        size, type,
        [r, permit](size_t offset, size_t length, httplib::DataSink& sink) {
          return sink.write(r->body.data() + offset, std::min(length, kChunk));
        },
        [r, permit](bool) mutable {
          r.reset();
          permit.reset();
        });
  });
  auto refuse = [](const httplib::Request& req, httplib::Response& res) {
    Response r;
    r.status = 405;
    r.body = R"({"error": "ltrun serve is read-only: only GET is served"})";
    r.headers = {{"Allow", "GET"}};
    send(res, r);
  };
  svr.Post(".*", refuse);
  svr.Put(".*", refuse);
  svr.Delete(".*", refuse);
  svr.Patch(".*", refuse);
  svr.Options(".*", refuse);
  svr.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (res.status == 404 && res.body.empty())
      res.set_content(nlohmann::json{{"error", "no such page: " + req.path}}.dump(
                          -1, ' ', false, nlohmann::json::error_handler_t::replace),
                      "application/json");
    if (res.status == 414 && res.body.empty())  // cpp-httplib's limit on the request line
      res.set_content(R"x({"error": "request line over 8 KB (many run ids go as ranges: ids=10-2000)"})x", "application/json");
  });

  int port = o.port;
  if (port == 0) {
    port = svr.bind_to_any_port(o.host);
    LT_CHECK(port > 0, "serve: cannot bind to {} (any port)", o.host);
  } else {
    LT_CHECK(svr.bind_to_port(o.host, port), "serve: cannot bind to {}:{}: {}; choose another --port (--port 0: any free one)",
             o.host, port, bind_problem(o.host, port));
  }
  svr.widen_backlog();

  // SIGINT/SIGTERM (the runtime's handler) stop the server from a thread of its own: stop()
  // is not async-signal-safe
  install_interrupt_handler(nullptr);
  std::atomic<bool> done{false};
  std::thread watcher([&] {
    while (!done) {
      if (interrupt_requested()) {
        api.stop();  // queries in flight end now
        heavy.stop();
        svr.stop();
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  const std::string shown = o.host.find(':') != std::string::npos ? "[" + o.host + "]" : o.host;
  on_listening("http://" + shown + ":" + std::to_string(port) + "/");
  svr.listen_after_bind();
  done = true;
  watcher.join();
  clear_interrupt();
}

}  // namespace ltrun::serve
