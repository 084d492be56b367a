import { serveProjector } from '@docshare/projection/distributed';
import { filesProjector } from './projector.ts';

await serveProjector(filesProjector, process.env);
