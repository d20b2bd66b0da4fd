// Seeded JSON order documents of a few hundred bytes, as apps store them: field
// names repeated in every document, small vocabularies, ISO timestamps, ids.
// Data that compresses (2-4x with Snappy), unlike the random values of the other
// workloads. The same seed gives the same documents.
import { Random } from '../test/util/random'

const FIRST = ['Alice', 'Bob', 'Carol', 'Dave', 'Erin', 'Frank', 'Grace', 'Heidi', 'Ivan', 'Judy', 'Mallory', 'Niaj', 'Olivia', 'Peggy', 'Rupert', 'Sybil']
const LAST = ['Smith', 'Jones', 'Taylor', 'Brown', 'Williams', 'Wilson', 'Johnson', 'Davies', 'Robinson', 'Wright', 'Thompson', 'Evans']
const STATUS = ['pending', 'paid', 'shipped', 'delivered', 'cancelled', 'refunded']
const CURRENCY = ['EUR', 'USD', 'GBP', 'CHF']
const TAGS = ['gift', 'priority', 'fragile', 'bulk', 'returning-customer', 'promo', 'b2b']
const CITIES = ['Berlin', 'Paris', 'London', 'Madrid', 'Rome', 'Vienna', 'Zurich', 'Amsterdam', 'Dublin', 'Lisbon']
const BASE_MS = Date.UTC(2026, 0, 1)

function pad (n: number, width: number): string {
  return String(n).padStart(width, '0')
}

function isoTime (rnd: Random): string {
  return new Date(BASE_MS + rnd.int(330 * 86400_000)).toISOString()
}

/** Document `i` of the sequence seeded by `rnd` (an order: customer, items, totals). */
function orderDocument (rnd: Random, i: number): string {
  const first = rnd.pick(FIRST)
  const last = rnd.pick(LAST)
  const items = []
  let total = 0
  for (let k = 1 + rnd.int(3); k > 0; k--) {
    const qty = 1 + rnd.int(4)
    const price = (100 + rnd.int(9900)) / 100
    total += qty * price
    items.push({ sku: `SKU-${pad(rnd.int(5000), 5)}`, qty, price })
  }
  return JSON.stringify({
    id: `ord_${pad(i, 8)}`,
    customer: { id: `cus_${pad(rnd.int(100000), 6)}`, name: `${first} ${last}`, email: `${first.toLowerCase()}.${last.toLowerCase()}@example.com`, city: rnd.pick(CITIES) },
    status: rnd.pick(STATUS),
    createdAt: isoTime(rnd),
    updatedAt: isoTime(rnd),
    items,
    total: Math.round(total * 100) / 100,
    currency: rnd.pick(CURRENCY),
    tags: TAGS.filter(() => rnd.int(4) === 0)
  })
}

/** `n` documents (UTF-8) from `seed`. */
export function jsonDocuments (n: number, seed: number): Buffer[] {
  const rnd = new Random(seed)
  const out = new Array<Buffer>(n)
  for (let i = 0; i < n; i++) out[i] = Buffer.from(orderDocument(rnd, i))
  return out
}
