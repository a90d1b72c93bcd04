-- 0008_eval_text: the text of each evaluated item, so that the web view shows what the model
-- was asked and what it wrote, and two runs can be compared item by item. `prompt`: the text
-- the model was given (the item's prompt with its few-shot examples); `output`: what it
-- generated (the generate protocols; NULL for logit and cloze, which generate nothing). Each
-- is cut to its first 4,000 bytes (at a UTF-8 character boundary) by the harness, with
-- "…[cut: N bytes]" appended when cut. A math item sampled k times stores its prompt once, on
-- its first sample's row ("ID"; the rows "ID#1".. have NULL). NULL in rows written before this
-- migration.
ALTER TABLE eval_items ADD COLUMN prompt TEXT;
ALTER TABLE eval_items ADD COLUMN output TEXT;
-- the items of two runs are matched by (bench, protocol, item_id): indexed for that join
DROP INDEX IF EXISTS eval_items_run;
CREATE INDEX eval_items_run ON eval_items(run_id, bench, protocol, item_id);
