-- A run row is written up to six times in its life (trigger, claim, suspend, resume mark, resume,
-- finish), and claims and finishes update many rows of one page in one statement. At fillfactor 80
-- a page had room for about four new versions, so most of those updates could not be HOT and wrote
-- a new entry into every index of runs (30 % HOT in the throughput benchmark). Half-full pages keep
-- most of them HOT (72 %; 35 % would reach 89 % at almost three times the table size). The price is
-- a runs table about twice its packed size. Affects pages written from now on.
ALTER TABLE runs SET (fillfactor = 50);
