import { runProjector } from '@docshare/projection/runtime';
import { statsProjector } from './projector.ts';

await runProjector(statsProjector);
