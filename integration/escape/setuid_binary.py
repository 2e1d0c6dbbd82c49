# Run a setuid-root binary (ARGS = its argv) with a pipe on stdin and watch its effective uid in /proc while it runs;
# su/sudo must also fail (no password can be given).
import subprocess, time
p = subprocess.Popen(ARGS, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
name = os.path.basename(ARGS[0])[:15]
euids = set()
deadline = time.time() + 5
while p.poll() is None and time.time() < deadline:
    try:
        st = dict(l.split(":", 1) for l in open("/proc/%d/status" % p.pid) if ":" in l)
        if st["Name"].strip() == name:
            euids.add(int(st["Uid"].split()[1]))
            break
    except (OSError, KeyError, ValueError):
        pass
    time.sleep(0.002)
out = p.communicate(timeout=10)[0].decode(errors="replace")
if 0 in euids or "uid=0" in out:
    report(False, "ran with euid 0: " + out.strip()[:200])
if p.returncode == 0 and name in ("su", "sudo"):
    report(False, "%s exited 0: %s" % (ARGS[0], out.strip()[:200]))
report(True, "exit %d, euid seen %s" % (p.returncode, sorted(euids) or "none"))
