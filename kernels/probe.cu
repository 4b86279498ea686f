// Machine probes: an empty kernel whose graph-replayed launches measure this machine's launch
// latency (one of the ceilings recorded with every run and baseline round).
extern "C" __global__ void kg_empty() {}

// Holds the stream for `ns` nanoseconds (global timer), launched just before a sample's start
// event: the host enqueues the event, the timed launches and the end event while the GPU is
// still busy here, so no host launch latency falls between the two events.
extern "C" __global__ void kg_hold(unsigned long long ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < ns);
}
