-- 0002_run_process: who ran a run, beyond host + pid, so that crash detection holds with
-- generic host names (`vm`, `localhost`) and reused pids: the machine id (/etc/machine-id),
-- the kernel's boot id (/proc/sys/kernel/random/boot_id) and the process start time in clock
-- ticks after boot (field 22 of /proc/PID/stat). NULL in rows written before this migration.
ALTER TABLE runs ADD COLUMN machine_id TEXT;
ALTER TABLE runs ADD COLUMN boot_id TEXT;
ALTER TABLE runs ADD COLUMN process_start INTEGER;
