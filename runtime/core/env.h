// runtime/core/env.h: facts about the process and machine that a run records
// (host, pid liveness, git revision, time), and small file helpers.
#pragma once
#include <string>

namespace ltrun {

std::string host_name();
bool process_alive(long pid);  // exists and has not ended (a zombie has)
// Identify a process beyond host + pid (generic host names, reused pids): the kernel's boot id
// (/proc/sys/kernel/random/boot_id), the machine id (/etc/machine-id), and a process's start
// time in clock ticks after boot (field 22 of /proc/PID/stat). "" or -1 when unavailable.
std::string boot_id();
std::string machine_id();
long long process_start_time(long pid);
// `git rev-parse HEAD` of the repository holding `dir` (with "-dirty" when the work tree has
// changes), or "" outside a repository or without git.
std::string git_revision(const std::string& dir);
double unix_time();                 // seconds since the epoch, sub-second resolution
std::string utc_timestamp();        // "YYYY-MM-DD HH:MM:SS.mmm", as SQLite's strftime('%f') writes
// The bytes of a regular file of at most max_bytes. Anything else is an error naming the
// file: a FIFO would block the reader, /dev/zero never ends, a folder is not text.
constexpr unsigned long long kMaxReadFileBytes = 1ull << 30;
std::string read_file(const std::string& path, unsigned long long max_bytes = kMaxReadFileBytes);
// The same checks without reading (for readers that open the file themselves).
void check_regular_file(const std::string& path, unsigned long long max_bytes = kMaxReadFileBytes);
std::string absolute_path(const std::string& path);
std::string dir_name(const std::string& path);
std::string base_name(const std::string& path);
bool file_exists(const std::string& path);
bool stderr_is_terminal();
// "512 B", "1.3 MiB", "3.6 TiB": bytes for messages (binary units, one decimal)
std::string human_bytes(double bytes);
// The memory of this machine, RAM + swap (0 when unknown): more than that cannot be held, and
// with overcommit such an allocation may even succeed until its pages are touched (OOM killer).
long long machine_memory_bytes();
// Makes glibc's malloc keep freed memory for reuse instead of handing it back to the kernel
// and faulting it in again: blocks up to 32 MiB come from the heap (not one mmap each), and
// the heap's top is trimmed only past 512 MiB free. A training step frees and reallocates
// the same activation buffers every step; with glibc's defaults that cost a page fault per
// 4 KiB each time (measured on the tiny base model: 1,770 tokens/s, 26% of the CPU time in
// the kernel; with this, 4,928 tokens/s). Left alone when the user sets malloc's own
// variables (GLIBC_TUNABLES with glibc.malloc.*, MALLOC_*_ variables); a no-op without glibc.
void tune_allocator();

}  // namespace ltrun
