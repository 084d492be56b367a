/**
 * Entry of the extraction child (forked by sandbox.ts): answers jobs one at a time. Small on
 * purpose: the format libraries are imported lazily by extract.ts, on the first file that needs them.
 */
import { serveJobs } from './protocol.ts';

serveJobs();
