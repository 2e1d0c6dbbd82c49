/* getpid through the i386 ABI (int $0x80, nr 20) in a forked child: a
 * filter that does not pin the architecture would let i386 numbers by. */
int main(int argc, char **argv)
{
	CASE = argv[1];
	pid_t pid = fork();
	if (pid == 0) {
		long r = 20; /* __NR_getpid on i386 */
		__asm__ volatile("int $0x80" : "+a"(r) : : "r8", "r9", "r10", "r11", "memory");
		_exit(r > 0 ? 200 : (int)(-r < 200 ? -r : 199));
	}
	int st;
	char how[64];
	waitpid(pid, &st, 0);
	if (WIFSIGNALED(st)) {
		snprintf(how, sizeof how, "killed by %s", sigabbrev_np(WTERMSIG(st)) ? sigabbrev_np(WTERMSIG(st)) : "?");
		report(1, how);
	}
	if (WEXITSTATUS(st) == 200)
		report(0, "i386 getpid succeeded");
	report(1, ename(WEXITSTATUS(st)));
	return 0;
}
