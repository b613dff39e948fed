-- An offer is a claim: a trigger or a completion that hands a run to a live worker claims it for
-- that worker with the worker's own lease, which the worker renews like any other (before, an offer
-- held a 5 s lease until the worker wrote that it took it). The registry records how long a lease
-- of each worker lasts; NULL (a worker of an earlier build) is read as the default, 15 s.
ALTER TABLE workers ADD COLUMN lease_ms integer;
