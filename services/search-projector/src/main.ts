import { serveProjector } from '@docshare/projection/distributed';
import { searchProjector } from './projector.ts';

await serveProjector(searchProjector, process.env);
