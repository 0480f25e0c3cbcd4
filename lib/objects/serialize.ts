/**
 * Plain JavaScript values as bytes: node:v8 serialization (structured
 * clone), for object collectives and object messages.
 */
import v8 from 'node:v8';

import { describe, MPIError } from '../errors.js';

/** A value's bytes, or why it has none. */
export type Packed = Uint8Array | MPIError;

/**
 * @internal `value` as node:v8 serialization's bytes; an ERR_ARG naming the
 * first part structured clone refuses (its path from `what`) when there is one.
 */
export function serialize(value: unknown, call: string, what: string): Packed {
  try {
    return v8.serialize(value);
  } catch (err) {
    const where = uncloneable(value, what, new Set()) ?? `${what} cannot be serialized (${(err as Error).message})`;
    return new MPIError('ERR_ARG', `${call}: ${where}; values travel as structuredClone accepts them`);
  }
}

// The path of the first part of `value` that structured clone refuses, or
// null: only run after serialization failed, to say where.
function uncloneable(value: unknown, path: string, seen: Set<object>): string | null {
  if (typeof value === 'function') return `${path} is a function`;
  if (typeof value === 'symbol') return `${path} is a symbol`;
  if (typeof value !== 'object' || value === null || seen.has(value)) return null;
  seen.add(value);
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const p = uncloneable(value[i], `${path}[${i}]`, seen);
      if (p) return p;
    }
    return null;
  }
  if (value instanceof Map) {
    for (const [k, v] of value) {
      const p = uncloneable(k, `${path} (a Map key)`, seen) ?? uncloneable(v, `${path}.get(${describeKey(k)})`, seen);
      if (p) return p;
    }
    return null;
  }
  if (value instanceof Set) {
    for (const v of value) {
      const p = uncloneable(v, `${path} (a Set member)`, seen);
      if (p) return p;
    }
    return null;
  }
  const proto = Object.getPrototypeOf(value) as object | null;
  if (proto === Object.prototype || proto === null) {
    for (const k of Object.keys(value)) {
      const p = uncloneable((value as Record<string, unknown>)[k], `${path}.${k}`, seen);
      if (p) return p;
    }
    return null;
  }
  try {
    v8.serialize(value);
    return null;
  } catch {
    return `${path} is ${describe(value)}, which structuredClone refuses`;
  }
}

function describeKey(k: unknown): string {
  return typeof k === 'string' ? JSON.stringify(k) : typeof k === 'number' || typeof k === 'bigint' ? String(k) : describe(k);
}
