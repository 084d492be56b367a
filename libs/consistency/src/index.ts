// Read-your-writes: where each projector group has got to (checkpoints), and the gate that holds a
// read carrying a consistency token until its group is through it. Used by the projectors and by
// the services that answer reads in front of them alike, none of which then imports the projection library.
export * from './consistency.ts';
