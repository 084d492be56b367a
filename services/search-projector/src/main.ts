import { runProjector } from '@docshare/projection/runtime';
import { searchProjector } from './projector.ts';

await runProjector(searchProjector);
