// VersionSet: the current Version, the counters that must survive restarts
// (next file number, last sequence, oldest needed log), and the MANIFEST that
// makes them durable.
//
// The manifest is a log-format file (lib/wal/log-format.ts) of VersionEdit
// records (lib/manifest/version-edit.ts). A new manifest's first record is a full
// snapshot of the state; CURRENT then names it. CURRENT is replaced atomically:
// write <n>.tmp, fsync it, rename over CURRENT, fsync the directory. An open
// that adds nothing to the version appends its edit (the live log, the newest
// sequence number) to the manifest it read, when that manifest can take it
// (resumeManifest); other opens start a new manifest (writeNewManifest). After
// a clean close, an open that replayed nothing owes that edit until the first
// write or edit (deferResume), and a clean close leaves a manifest the next
// open can append to and reads quickly: a fresh snapshot where the manifest
// is a new database's or has grown past COMPACT_AT_CLOSE_BYTES (recordClose). Each later edit is appended and fsynced before the version it
// describes is installed, so the state on disk never refers to a table whose
// edit is not durable, and a table is deleted only after a durable edit dropped it.
//
// File lifetimes: each live version (current or pinned by a reader) counts its
// tables; when a table's count drops to zero it is reported obsolete through
// `onObsoleteTable` and the caller deletes the file.
import { createWhenRoom, type FileSystem } from '../fs/fs'
import type { FileMeta } from './file-meta'
import { Version } from './version'
import { decodeVersionEdit, encodeVersionEdit, MANIFEST_FORMAT_VERSION, type LogsAtClose, type VersionEdit } from './version-edit'
import { LogReader } from '../wal/log-reader'
import { LogWriter } from '../wal/log-writer'
import { CURRENT, join, logName, manifestName, parseFileName, tableName, tempName } from '../filenames'
import { corruption, ioError, isLevelError, levelError } from '../errors'
import { NUM_LEVELS } from '../options'
import type { InternalKey } from '../keys'
import { assert } from '../invariants'

/** Roll the manifest over to a fresh snapshot once it grows past this. */
const MANIFEST_ROLL_BYTES = 4 * 1024 * 1024

/** A clean close writes a fresh snapshot in place of a manifest past this size, so the next open reads one record, not every edit. */
const COMPACT_AT_CLOSE_BYTES = 64 * 1024

export class VersionSet {
  current: Version = Version.empty()
  nextFileNumber = 2
  lastSequence = 0
  /** Logs numbered below this hold nothing that is not in tables. */
  logNumber = 0
  manifestNumber = 0
  compactPointers: Array<InternalKey | undefined> = new Array(NUM_LEVELS).fill(undefined)
  onObsoleteTable: (number: number) => void = () => {}

  private manifest: LogWriter | undefined
  /**
   * Set by recover(): the manifest read ends in a whole record, its snapshot
   * is of this format version and names a live log (not a new database's,
   * whose history from creation a truncation could cut back to an empty state
   * that no file refutes), and it is below MANIFEST_ROLL_BYTES: an edit may be
   * appended to it.
   */
  private appendable = false
  /**
   * The edit an open that found nothing to replay owes the manifest (see
   * resumeManifest): written by ensureResumed before the first log record or
   * version edit, or never, if the database is closed first.
   */
  private owedResume: { logNumber: number, lastSequence: number } | undefined
  /** The first record of the manifest names a live log (see appendable). */
  private snapshotNamesLog = false
  private readonly tableRefs = new Map<number, number>()

  constructor (private readonly fs: FileSystem, private readonly dir: string) {
    this.install(this.current)
  }

  /** True if the directory holds a database (a CURRENT file). */
  exists (): boolean {
    return this.fs.exists(join(this.dir, CURRENT))
  }

  newFileNumber (): number {
    return this.nextFileNumber++
  }

  /**
   * Loads the state named by CURRENT. A missing or unusable CURRENT or manifest
   * is corruption: open must fail rather than present an empty database.
   */
  /**
   * Set by recover() when the manifest's last edit is a clean close's record:
   * the logs the database still needed then, with their synced sizes.
   */
  logsAtClose: LogsAtClose | undefined

  recover (): void {
    let current: string
    try {
      current = this.fs.readSmallFile(join(this.dir, CURRENT)).toString('latin1')
    } catch (err) {
      throw ioError('Cannot read CURRENT', err, CURRENT)
    }
    const m = /^(MANIFEST-(\d+))\n$/.exec(current)
    if (!m) throw corruption(CURRENT, 'does not name a manifest')
    const name = m[1]
    const path = join(this.dir, name)
    if (!this.fs.exists(path)) throw corruption(CURRENT, `names ${name}, which does not exist`)
    const reader = new LogReader(this.fs, path, name)
    let version = Version.empty()
    // Edits without range tombstones, over a version without any, are applied together (Version.applyAll).
    const pending: VersionEdit[] = []
    const applyPending = (): void => {
      if (pending.length > 0) version = version.applyAll(pending)
      pending.length = 0
    }
    let sawSnapshot = false
    let formatVersion: number | undefined
    let firstLogNumber = 0
    let haveNext = false
    let haveSeq = false
    try {
      for (let rec = reader.next(); rec !== undefined; rec = reader.next()) {
        const edit = decodeVersionEdit(rec, name)
        if (edit.formatVersion !== undefined && edit.formatVersion > MANIFEST_FORMAT_VERSION) {
          throw levelError('LEVEL_NOT_SUPPORTED', `${name} has format version ${edit.formatVersion}; this version of lsm-level reads up to ${MANIFEST_FORMAT_VERSION} (see UPGRADING.md)`)
        }
        if (version.rangeTombstones.length === 0 && (edit.rangeTombstones === undefined || edit.rangeTombstones.length === 0)) {
          pending.push(edit)
        } else {
          applyPending()
          version = version.apply(edit)
        }
        if (!sawSnapshot) { formatVersion = edit.formatVersion; firstLogNumber = edit.logNumber ?? 0 }
        sawSnapshot = true
        if (edit.logNumber !== undefined) this.logNumber = edit.logNumber
        if (edit.nextFileNumber !== undefined) { this.nextFileNumber = edit.nextFileNumber; haveNext = true }
        if (edit.lastSequence !== undefined) { this.lastSequence = edit.lastSequence; haveSeq = true }
        for (const cp of edit.compactPointers ?? []) this.compactPointers[cp.level] = cp.key
        // Only the last edit tells how the database was left: any edit after a close record came later.
        this.logsAtClose = edit.logsAtClose
      }
      applyPending()
    } finally {
      reader.close?.()
    }
    if (reader.tail.state === 'corrupt') {
      throw corruption(name, `damaged record at offset ${reader.tail.offset} followed by valid records`)
    }
    // A clean close's record holds only as the manifest's very end: bytes after
    // it (a torn record) were appended by a later open (resumeManifest).
    if (reader.tail.state !== 'clean') this.logsAtClose = undefined
    if (!sawSnapshot || !haveNext || !haveSeq) throw corruption(name, 'no complete state record')
    for (const files of version.levels) {
      for (const f of files) if (f.number >= this.nextFileNumber) this.nextFileNumber = f.number + 1
    }
    this.checkAgainstDirectory(version, name, reader.tail.state === 'clean' ? -1 : reader.tail.offset)
    this.manifestNumber = Number(m[2])
    if (this.manifestNumber >= this.nextFileNumber) this.nextFileNumber = this.manifestNumber + 1
    this.snapshotNamesLog = formatVersion === MANIFEST_FORMAT_VERSION && firstLogNumber > 0
    this.appendable = reader.tail.state === 'clean' && this.snapshotNamesLog && reader.offset < MANIFEST_ROLL_BYTES
    this.replaceCurrent(version)
  }

  /**
   * The recovered state must agree with the directory: every table it names
   * exists, and so does the log it starts from whenever a newer log exists (logs
   * are created in number order, so that log was created and has since been
   * lost). A damaged last record (`tornAt` >= 0) is taken for an interrupted
   * append only if the state without it passes this check; otherwise the lost
   * edit mattered (a flush or compaction whose inputs are gone) and opening
   * would silently lose its data and delete its tables as orphans. File numbers
   * found in the directory are never reused.
   */
  private checkAgainstDirectory (version: Version, name: string, tornAt: number): void {
    const present = new Set<string>()
    let newerLog = false
    for (const n of this.fs.list(this.dir)) {
      const p = parseFileName(n)
      if (p === undefined) continue
      present.add(n)
      if (p.number >= this.nextFileNumber) this.nextFileNumber = p.number + 1
      if (p.type === 'log' && p.number > this.logNumber) newerLog = true
    }
    const missing: string[] = []
    for (const files of version.levels) for (const f of files) if (!present.has(tableName(f.number))) missing.push(tableName(f.number))
    if (this.logNumber > 0 && newerLog && !present.has(logName(this.logNumber))) missing.push(logName(this.logNumber))
    if (missing.length === 0) return
    const list = missing.slice(0, 4).join(', ') + (missing.length > 4 ? ', ...' : '')
    if (tornAt >= 0) throw corruption(name, `damaged record at offset ${tornAt}; without it the state names missing files (${list})`)
    throw corruption(missing[0], `missing, but ${name} names it (missing: ${list})`)
  }

  /**
   * Starts a new manifest holding a snapshot of the current state and points
   * CURRENT at it. Used on every open (also for a new database): there
   * `recovered` gives the live log and the newest sequence number the snapshot
   * records (what recovery found), in place of a version edit and its fsync.
   * The directory is synced twice (the new manifest's entry, then CURRENT's),
   * which makes every create before the call durable too.
   */
  writeNewManifest (recovered?: { logNumber: number, lastSequence: number }): void {
    if (recovered !== undefined) {
      assert(recovered.logNumber >= this.logNumber, 'the live log moves back')
      this.logNumber = recovered.logNumber
      if (recovered.lastSequence > this.lastSequence) this.lastSequence = recovered.lastSequence
    }
    const number = this.newFileNumber()
    const name = manifestName(number)
    const file = this.fs.openWrite(join(this.dir, name), { rarelyAppended: true })
    const writer = new LogWriter(file)
    try {
      writer.addRecord(encodeVersionEdit(this.snapshotEdit()))
      writer.sync()
      this.fs.syncDir(this.dir)
      this.setCurrent(name, number)
    } catch (err) {
      writer.close()
      this.fs.remove(join(this.dir, name))
      throw err
    }
    this.snapshotNamesLog = this.logNumber > 0
    const old = this.manifest
    const oldNumber = this.manifestNumber
    this.manifest = writer
    this.manifestNumber = number
    if (old) old.close()
    if (oldNumber > 0 && oldNumber !== number) this.fs.remove(join(this.dir, manifestName(oldNumber)))
  }

  /**
   * An open that adds nothing to the version records the live log and the
   * newest sequence number recovery found: as one edit appended to the
   * manifest it read, synced (one fdatasync, where a new manifest costs two,
   * two directory fsyncs and a rename), if that manifest can take it (see
   * appendable) and the file system can append; otherwise in a new manifest
   * (writeNewManifest). The edit also ends a clean close's record (any edit
   * after it does). `syncDir`: files created before the call whose directory
   * entries must be durable before writes go to them (a new log); a new
   * manifest's directory syncs cover them, an appended edit is preceded by one.
   * If the append fails, the manifest may end in a torn record, which the next
   * open takes for an interrupted append (recover).
   */
  resumeManifest (recovered: { logNumber: number, lastSequence: number }, syncDir: boolean): void {
    if (!this.appendable || this.fs.openAppend === undefined || this.manifest !== undefined) {
      this.writeNewManifest(recovered)
      return
    }
    assert(recovered.logNumber >= this.logNumber, 'the live log moves back')
    if (syncDir) this.fs.syncDir(this.dir)
    this.appendResume(recovered)
  }

  /**
   * resumeManifest for an open that changes nothing the manifest records: the
   * live log is the empty one it names and the newest sequence number is its
   * own (nothing replayed; a clean close's database). The edit is owed, not
   * written: nothing on disk differs from what the manifest says until a
   * record goes to the log or a version edit is made, and ensureResumed
   * writes the edit first. A clean close's record stays the manifest's last
   * until then, and is still true: a crash before the first write finds the
   * database as it was closed. An open followed by reads alone writes nothing.
   * Only after a clean close (its record is the manifest's last); otherwise,
   * and where the manifest cannot take an edit, it is resumeManifest.
   */
  deferResume (recovered: { logNumber: number, lastSequence: number }): void {
    if (!this.appendable || this.fs.openAppend === undefined || this.manifest !== undefined || this.logsAtClose === undefined ||
      recovered.logNumber !== this.logNumber || recovered.lastSequence !== this.lastSequence) {
      this.resumeManifest(recovered, false)
      return
    }
    this.owedResume = recovered
  }

  /**
   * Writes the edit an open owes (deferResume), synced, before the caller
   * appends a record to the log. Throws a LevelError if it cannot; then
   * every later call and edit fails too (the manifest's tail is not known).
   */
  ensureResumed (): void {
    if (this.manifestFailure !== undefined) throw this.manifestFailure
    const owed = this.owedResume
    if (owed === undefined) return
    try {
      this.appendResume(owed)
    } catch (err) {
      this.manifestFailure = isLevelError(err) ? err : ioError('Cannot append to the manifest; the database takes no more writes until reopened', err, manifestName(this.manifestNumber))
      throw this.manifestFailure
    }
    this.owedResume = undefined
  }

  /** Appends (synced) the edit recording the live log and the newest sequence number to the manifest read at open. */
  private appendResume (recovered: { logNumber: number, lastSequence: number }): void {
    const lastSequence = Math.max(recovered.lastSequence, this.lastSequence)
    const writer = new LogWriter(this.fs.openAppend!(join(this.dir, manifestName(this.manifestNumber))))
    try {
      writer.addRecord(encodeVersionEdit({ logNumber: recovered.logNumber, nextFileNumber: this.nextFileNumber, lastSequence }))
      writer.sync()
    } catch (err) {
      writer.close()
      throw err
    }
    this.manifest = writer
    this.logNumber = recovered.logNumber
    this.lastSequence = lastSequence
  }

  private setCurrent (name: string, number: number): void {
    const tmp = join(this.dir, tempName(number))
    const file = this.fs.openWrite(tmp)
    try {
      file.append(Buffer.from(name + '\n', 'latin1'))
      file.sync()
    } finally {
      file.close()
    }
    this.fs.rename(tmp, join(this.dir, CURRENT))
    this.fs.syncDir(this.dir)
  }

  private snapshotEdit (): VersionEdit {
    const newFiles: Array<{ level: number, meta: FileMeta }> = []
    this.current.levels.forEach((files, level) => {
      for (const meta of files) newFiles.push({ level, meta })
    })
    const compactPointers: Array<{ level: number, key: InternalKey }> = []
    this.compactPointers.forEach((key, level) => { if (key) compactPointers.push({ level, key }) })
    return {
      formatVersion: MANIFEST_FORMAT_VERSION,
      logNumber: this.logNumber,
      nextFileNumber: this.nextFileNumber,
      lastSequence: this.lastSequence,
      compactPointers,
      newFiles,
      rangeTombstones: this.current.rangeTombstones.slice()
    }
  }

  /**
   * Makes `edit` durable in the manifest (its fsync off the event loop), then
   * installs the version it yields. Edits are applied one at a time, in call
   * order. Rejects (and installs nothing) if the manifest cannot be written and
   * synced; every later edit then fails too, and the caller must stop taking
   * writes: the manifest's tail is no longer known.
   * REQUIRES: a manifest is open (writeNewManifest was called).
   */
  logAndApply (edit: VersionEdit): Promise<void> {
    const run = this.applyQueue.then(() => this.applyNow(edit))
    this.applyQueue = run.catch(() => {})
    return run
  }

  /**
   * Appends a clean close's record (see LogsAtClose) after every edit queued
   * before it, and syncs the manifest; in a fresh manifest first where the
   * next open could not append to this one or would read many edits. The
   * caller has synced the logs it names and writes nothing after it. Rejects
   * if the manifest cannot be written.
   */
  recordClose (logsAtClose: LogsAtClose): Promise<void> {
    const run = this.applyQueue.then(async () => {
      if (this.manifestFailure !== undefined) throw this.manifestFailure
      // Nothing written since an open that owes its edit: the manifest's
      // clean-close record (the open found one) still holds.
      if (this.owedResume !== undefined) return
      assert(this.manifest !== undefined, 'no manifest open')
      if (this.fs.openAppend !== undefined && (!this.snapshotNamesLog || this.manifest.size() > COMPACT_AT_CLOSE_BYTES)) {
        // The next open reads one snapshot and appends its edit (appendable),
        // where it would otherwise read every edit since the last snapshot,
        // or write a new manifest itself: two fdatasyncs, two directory fsyncs.
        // (A file system that cannot append gets a new manifest at every open.)
        try {
          await createWhenRoom(this.fs, this.dir, 2, () => this.writeNewManifest())
        } catch {
          // The old manifest is still valid and current: the record goes there.
        }
      }
      this.manifest.addRecord(encodeVersionEdit({ logsAtClose }))
      await this.manifest.syncAsync()
    })
    this.applyQueue = run.catch(() => {})
    return run
  }

  private applyQueue: Promise<void> = Promise.resolve()
  private manifestFailure: unknown

  private async applyNow (edit: VersionEdit): Promise<void> {
    this.ensureResumed()
    assert(this.manifest !== undefined, 'no manifest open')
    if (edit.logNumber !== undefined && edit.logNumber < this.logNumber) edit.logNumber = this.logNumber
    edit.nextFileNumber = this.nextFileNumber
    if (edit.lastSequence === undefined || edit.lastSequence < this.lastSequence) edit.lastSequence = this.lastSequence
    const next = this.current.apply(edit)
    try {
      this.manifest.addRecord(encodeVersionEdit(edit))
      await this.manifest.syncAsync()
    } catch (err) {
      this.manifestFailure = err
      throw err
    }
    if (edit.logNumber !== undefined) this.logNumber = edit.logNumber
    this.lastSequence = edit.lastSequence
    for (const cp of edit.compactPointers ?? []) this.compactPointers[cp.level] = cp.key
    this.replaceCurrent(next)
    if (this.manifest.size() > MANIFEST_ROLL_BYTES) {
      try {
        // The new manifest and CURRENT's temporary file.
        await createWhenRoom(this.fs, this.dir, 2, () => this.writeNewManifest())
      } catch (err) {
        // The old manifest is still valid and current; rolling over can wait.
        if (!isLevelError(err)) void err
      }
    }
  }

  /**
   * A read-only open (lib/follower.ts) makes `next`, read from the writer's
   * manifest, current. It writes nothing: no manifest is open.
   */
  follow (next: Version, logNumber: number, lastSequence: number): void {
    this.logNumber = logNumber
    this.lastSequence = lastSequence
    this.replaceCurrent(next)
  }

  private replaceCurrent (next: Version): void {
    const prev = this.current
    this.install(next)
    this.current = next
    prev.unref()
  }

  /** Makes `v` live: counts its tables and takes the "current" reference. */
  private install (v: Version): void {
    for (const n of v.fileNumbers()) this.tableRefs.set(n, (this.tableRefs.get(n) ?? 0) + 1)
    v.onRelease = (dead) => this.release(dead)
    v.ref()
  }

  private release (v: Version): void {
    for (const n of v.fileNumbers()) {
      const left = (this.tableRefs.get(n) ?? 1) - 1
      if (left > 0) {
        this.tableRefs.set(n, left)
      } else {
        this.tableRefs.delete(n)
        this.onObsoleteTable(n)
      }
    }
  }

  /** True if some live version still references table `number`. */
  isLiveTable (number: number): boolean {
    return this.tableRefs.has(number)
  }

  /** Directory entries that no state refers to, to delete on open. */
  orphanFiles (liveLogs: Set<number>): string[] {
    const out: string[] = []
    for (const name of this.fs.list(this.dir)) {
      const p = parseFileName(name)
      if (!p) continue
      if (p.type === 'table' && !this.tableRefs.has(p.number)) out.push(name)
      else if (p.type === 'log' && !liveLogs.has(p.number)) out.push(name)
      else if (p.type === 'manifest' && p.number !== this.manifestNumber) out.push(name)
      else if (p.type === 'temp') out.push(name)
    }
    return out
  }

  close (): void {
    if (this.manifest) {
      this.manifest.close()
      this.manifest = undefined
    }
  }
}
