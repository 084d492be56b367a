import { serveProjector } from '@docshare/projection/distributed';
import { statsProjector } from './projector.ts';

await serveProjector(statsProjector, process.env);
