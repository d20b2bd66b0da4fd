// Invariant checks. Cheap ones are always on (`assert`); expensive ones run only
// when `paranoid` is on, which the tests switch on (LSM_PARANOID=1).
import { envFlag } from './util/env-flag'

export const checks = {
  paranoid: envFlag('LSM_PARANOID')
}

export function assert (cond: unknown, message: string): asserts cond {
  if (!cond) throw new Error('lsm-level invariant broken: ' + message)
}
