/** Derived communicators every collective suite is repeated over (see test/fixtures/check.mjs). */
export const derivedComms = ['dup', 'split', 'create'] as const;
