// Read-your-writes: where each projector group has got to (checkpoints), and the gate that holds a
// read carrying a consistency token until its group is through it. Used by the projectors, the
// gateway and docs-command alike, so none of them imports the projection library for it.
export * from './consistency.ts';
