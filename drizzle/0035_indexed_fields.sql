-- A queue's indexed fields: up to five payload or result paths
-- ("payload.customerId") its operators filter the jobs list by every day,
-- as a JSON array of path texts; NULL: none. Each has a partial expression
-- index on jobs (queue_name, json_extract(<root>, '<path>'), id) WHERE
-- queue_name = '<queue>', created and dropped by the admin call that
-- changes this column, in the same batch (src/db/store/indexed-fields.ts):
-- those indexes are per queue, so no migration names them.
ALTER TABLE `queues` ADD `indexed_fields` text;
