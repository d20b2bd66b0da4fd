// Invariant checks. Cheap ones are always on (`assert`); expensive ones run only
// when `paranoid` is on, which the tests switch on (LSM_PARANOID=1).

export const checks = {
  paranoid: process.env.LSM_PARANOID === '1'
}

export function assert (cond: unknown, message: string): asserts cond {
  if (!cond) throw new Error('lsm-level invariant broken: ' + message)
}
