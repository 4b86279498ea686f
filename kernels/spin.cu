// Calibration kernel: one thread busy-waits on the global nanosecond timer for `ns`
// nanoseconds, then writes 1.0 to *done. Its latency is known by construction, which is
// what the regression gate is tested against.
extern "C" __global__ void kg_spin(float* done, unsigned long long ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < ns);
    *done = 1.0f;
}
