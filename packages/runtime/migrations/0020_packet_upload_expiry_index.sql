-- Upload URLs never used are deleted once they expire (the timer loop's expired-uploads work);
-- this index finds them, and the next one due, without reading the packets themselves.
CREATE INDEX packets_unuploaded_expiry ON packets (upload_expires_at) WHERE data IS NULL;
