/**
 * The backend the collectives of this process run on (lib/coll/backend.ts):
 * nodempi's shared-memory transport. Chosen once, at initialisation, when
 * there is more than one.
 */
import type { CollectiveBackend } from './backend.js';
import { shm } from './shm.js';

export const active: CollectiveBackend = shm;
