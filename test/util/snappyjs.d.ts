// Types for snappyjs (a pure-JS Snappy codec, a devDependency used only as an
// independent implementation in test/snappy.test.ts and benchmarks/snappy.ts).
declare module 'snappyjs' {
  export function compress<T extends Uint8Array | ArrayBuffer> (uncompressed: T): T
  export function uncompress<T extends Uint8Array | ArrayBuffer> (compressed: T, maxLength?: number): T
}
