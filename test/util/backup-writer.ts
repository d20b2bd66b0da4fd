// A writer process for test/replica-store.test.ts: opens the database in
// argv[2], ships it to the directory store in argv[3] (intervalMs 50; leaseMs 1000: a
// restart after a kill waits a second for the lease), and
// writes write number i (its sequence number) for i from db.sequence + 1 to
// argv[4] (+n: db.sequence + n): a put of key(i) = value(i), and at every 10th a delete of key(i - 5),
// one write at a time; prints "seq <n>" now and then and "done <n>" at the end.
import { LsmLevel } from '../../index'
import { DirectoryStore } from '../../hosts/node/object-store/directory-store'

export const key = (i: number): string => 'k' + String(i).padStart(7, '0')
export const value = (i: number): string => 'v' + i + '-' + 'x'.repeat(i % 50)

/** The state after write number s. */
export function stateAt (s: number): Map<string, string> {
  const m = new Map<string, string>()
  for (let i = 1; i <= s; i++) {
    if (i % 10 === 0) m.delete(key(i - 5))
    else m.set(key(i), value(i))
  }
  return m
}

async function main (): Promise<void> {
  const [dir, storeDir, untilArg] = process.argv.slice(2)
  const db = new LsmLevel(dir)
  await db.open()
  const until = untilArg.startsWith('+') ? db.sequence + Number(untilArg.slice(1)) : Number(untilArg)
  await db.replicate(new DirectoryStore(storeDir), { intervalMs: 50, leaseMs: 1000 })
  for (let i = db.sequence + 1; i <= until; i++) {
    if (i % 10 === 0) await db.del(key(i - 5))
    else await db.put(key(i), value(i))
    if (i % 200 === 0) process.stdout.write(`seq ${i}\n`)
    if (i % 50 === 0) await new Promise((resolve) => setTimeout(resolve, 5))
  }
  await db.close()
  process.stdout.write(`done ${until}\n`)
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err)
    process.exit(1)
  })
}
