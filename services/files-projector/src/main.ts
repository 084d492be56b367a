import { runProjector } from '@docshare/projection/runtime';
import { filesProjector } from './projector.ts';

await runProjector(filesProjector);
