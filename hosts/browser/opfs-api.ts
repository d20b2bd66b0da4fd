// The subset of the Origin Private File System API that the OPFS file system
// uses, as types: the browser's objects in a worker, the tests' fake in Node.
/** FileSystemSyncAccessHandle: synchronous in a dedicated worker. */
export interface SyncAccessHandle {
  read (buffer: Uint8Array, options: { at: number }): number
  write (buffer: Uint8Array, options: { at: number }): number
  truncate (size: number): void
  getSize (): number
  flush (): void
  close (): void
}

export interface FileHandle {
  createSyncAccessHandle (): Promise<SyncAccessHandle>
  /** A File: the contents now, readable (FileReaderSync) while no handle is open. */
  getFile (): Promise<FileSnapshot>
}

/** A File (Blob), as far as it is used. */
export interface FileSnapshot {
  readonly size: number
  slice (start: number, end: number): unknown
}

/** FileSystemDirectoryHandle. */
export interface DirectoryHandle {
  getDirectoryHandle (name: string, options?: { create?: boolean }): Promise<DirectoryHandle>
  getFileHandle (name: string, options?: { create?: boolean }): Promise<FileHandle>
  removeEntry (name: string, options?: { recursive?: boolean }): Promise<void>
  keys (): AsyncIterable<string>
}
