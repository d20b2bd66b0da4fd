// Large buffers another thread may read without a copy: memtable arena chunks
// and large encoded write batches, which a flush on a worker thread reads.
//
// Where the host shares memory between its threads (Node's worker threads:
// postMessage shares a SharedArrayBuffer instead of copying it), they are
// allocated in shared memory, and a flush reads the frozen memtable in place.
// Elsewhere (browsers, where shared memory needs cross-origin isolation and
// TextDecoder refuses shared views) they are ordinary buffers, which a flush
// copies. Either way the bytes are never written again once handed over: a
// frozen memtable takes no more inserts.

let shared = false

/** Called by a host whose threads share memory (hosts/node/platform.ts). */
export function shareLargeBuffers (on: boolean): void {
  shared = on && typeof SharedArrayBuffer === 'function'
}

/** A buffer of `n` bytes of its own (never a slice of a pool), in shared memory where the host shares it. */
export function largeBuffer (n: number): Buffer {
  return shared ? Buffer.from(new SharedArrayBuffer(n)) : Buffer.allocUnsafeSlow(n)
}

/** Whether `b` lies in shared memory (another thread reads it in place: posting it copies nothing). */
export function isShared (b: Uint8Array): boolean {
  return typeof SharedArrayBuffer === 'function' && b.buffer instanceof SharedArrayBuffer
}
