/* What the host's memory can do for a copy, by kind of store and threads.
 *
 * The baseline `onnxop bench` divides by (lavapipe's copy_buffer_to_buffer)
 * is glibc's memcpy on one thread, which for large sizes uses non-temporal
 * stores: they skip reading each destination line before writing it. A
 * kernel's stores on a CPU adapter are ordinary ones. This prints both kinds,
 * on 1 and 2 threads, so a kernel figure can be set against what ordinary
 * stores reach on the same machine.
 *
 *     cc -O2 -mavx2 -pthread benchmarks/host_copy_bound.c -o /tmp/bound
 *     /tmp/bound 1024        # MiB; best of 5 rounds each
 */
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static size_t total;
static char *src, *dst;
static int mode, threads;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void *work(void *arg) {
    long i = (long)arg;
    size_t per = total / threads;
    char *s = src + i * per, *d = dst + i * per;
    if (mode == 0) {
        memcpy(d, s, per);
    } else if (mode == 1) {
        for (size_t k = 0; k < per; k += 32)
            _mm256_store_si256((__m256i *)(d + k), _mm256_load_si256((const __m256i *)(s + k)));
    } else {
        for (size_t k = 0; k < per; k += 32)
            _mm256_stream_si256((__m256i *)(d + k), _mm256_load_si256((const __m256i *)(s + k)));
        _mm_sfence();
    }
    return NULL;
}

int main(int argc, char **argv) {
    total = (size_t)(argc > 1 ? atol(argv[1]) : 1024) << 20;
    src = aligned_alloc(4096, total);
    dst = aligned_alloc(4096, total);
    if (!src || !dst) return 1;
    memset(src, 1, total);
    memset(dst, 2, total);
    const char *names[] = {"glibc memcpy", "AVX2 stores", "AVX2 non-temporal stores"};
    for (mode = 0; mode < 3; mode++) {
        for (threads = 1; threads <= 2; threads++) {
            double best = 1e9;
            for (int r = 0; r < 5; r++) {
                pthread_t t[2];
                double t0 = now();
                for (long i = 0; i < threads; i++) pthread_create(&t[i], NULL, work, (void *)i);
                for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
                double dt = now() - t0;
                if (dt < best) best = dt;
            }
            printf("%zu MiB  %-26s %d thread%s  %6.2f GB/s\n", total >> 20, names[mode], threads,
                   threads > 1 ? "s" : " ", total / best / 1e9);
        }
    }
    return 0;
}
