-- A template and its environment are kept as the user wrote them: jsonb orders an object's keys
-- by length and name, but GET .../template, a json parameter's value, and the properties,
-- attributes and outputs made from them show the user's order, as Heat does. json keeps the
-- text as given, and the codec reads it back into dicts in that order.
ALTER TABLE raw_templates ALTER COLUMN environment DROP DEFAULT;
ALTER TABLE raw_templates
    ALTER COLUMN template TYPE json USING template::json,
    ALTER COLUMN environment TYPE json USING environment::json;
ALTER TABLE raw_templates ALTER COLUMN environment SET DEFAULT '{}';
ALTER TABLE stacks ALTER COLUMN outputs TYPE json USING outputs::json;
ALTER TABLE resources ALTER COLUMN attributes DROP DEFAULT;
ALTER TABLE resources
    ALTER COLUMN attributes TYPE json USING attributes::json,
    ALTER COLUMN properties TYPE json USING properties::json;
ALTER TABLE resources ALTER COLUMN attributes SET DEFAULT '{}';

-- The id a template's external_id gave a resource taken over rather than made: an update that
-- adds, removes or changes it is refused, as Heat refuses it.
ALTER TABLE resources ADD COLUMN external_id text;
