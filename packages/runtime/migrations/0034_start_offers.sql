-- Start offers: the transaction that triggers a run offers it, already claimed, to a live worker of
-- its task with a free slot (engine/runs/transitions/offer-start.ts), as a completion offers a resume,
-- instead of leaving it to a start job. An offered run is EXECUTING with `offered_at` set until the
-- worker takes it; `offered_start` tells an offered start from an offered resume, so that a start
-- given back (declined, or its offer lease lapsed) goes back to QUEUED as if never claimed, and a
-- resume to WAITING. True only while the start is offered: taking, declining or lapsing clears it.
ALTER TABLE runs ADD COLUMN offered_start boolean NOT NULL DEFAULT false;
