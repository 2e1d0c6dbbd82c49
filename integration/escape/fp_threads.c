/* False-positive check: a threaded program (pthread_create tries clone3,
 * falls back to clone on ENOSYS). Prints "sum 4950". */
#include <pthread.h>
#include <stdio.h>

static long part[4];

static void *work(void *arg)
{
	long i = (long)arg, s = 0;
	for (long k = i * 25; k < (i + 1) * 25; k++)
		s += k;
	part[i] = s;
	return NULL;
}

int main(void)
{
	pthread_t th[4];
	for (long i = 0; i < 4; i++)
		if (pthread_create(&th[i], NULL, work, (void *)i) != 0) {
			perror("pthread_create");
			return 1;
		}
	long sum = 0;
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		sum += part[i];
	}
	printf("sum %ld\n", sum);
	return 0;
}
