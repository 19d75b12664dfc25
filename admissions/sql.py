"""SQL the database holds for admissions: the triggers the ORM cannot express.

Kept beside the models; the migrations applied a frozen copy, so a change here
needs a migration of its own. Errors use SQLSTATE 23514
(check_violation) so Django raises IntegrityError, like a CHECK constraint.
"""

from lib.sql import row_trigger

# A record is a receipt. Correcting a decision is a new decision (challenge,
# revoke), never an edit, so the history a status is derived from cannot be
# rewritten after the fact.
APPEND_ONLY_TRIGGER, DROP_APPEND_ONLY_TRIGGER = row_trigger(
    "admissions_append_only BEFORE UPDATE OR DELETE ON admissions_admissionrecord",
    function="admissions_refuse_change",
    body="""BEGIN
  RAISE EXCEPTION 'admissions_append_only: an admission record is never changed or deleted; record a new decision'
    USING ERRCODE = '23514';
END
""",
)

# What a record may say, checked against the claim it names: a system row that
# is not a tombstone, in the record's organisation, decided by a steward who
# did not write it (four eyes). A promotion names a tombstone for its stance.
INSERT_GUARD_TRIGGER, DROP_INSERT_GUARD_TRIGGER = row_trigger(
    "admissions_guard_insert BEFORE INSERT ON admissions_admissionrecord",
    function="admissions_guard_insert",
    body="""DECLARE
  claim memories_memory%ROWTYPE;
  tomb memories_memory%ROWTYPE;
BEGIN
  SELECT * INTO claim FROM memories_memory WHERE id = NEW.claim_id;
  IF NOT FOUND THEN
    RETURN NEW;  -- the foreign key refuses it
  END IF;
  IF claim.bucket <> 'system' THEN
    RAISE EXCEPTION 'admissions_system_only: only a system claim can be decided' USING ERRCODE = '23514';
  END IF;
  IF claim.stance IS NOT NULL THEN
    RAISE EXCEPTION 'admissions_no_tombstone: a promotion tombstone cannot be decided' USING ERRCODE = '23514';
  END IF;
  IF NEW.organisation_id IS DISTINCT FROM claim.organisation_id THEN
    RAISE EXCEPTION 'admissions_claim_organisation: a record carries its claim''s organisation'
      USING ERRCODE = '23514';
  END IF;
  IF claim.written_by_id IS NOT DISTINCT FROM NEW.steward_id THEN
    RAISE EXCEPTION 'admissions_four_eyes: a claim''s author cannot decide it' USING ERRCODE = '23514';
  END IF;
  IF NOT EXISTS (SELECT 1 FROM accounts_membership WHERE user_id = NEW.steward_id AND role = 'steward') THEN
    RAISE EXCEPTION 'admissions_steward_only: only a steward records decisions' USING ERRCODE = '23514';
  END IF;
  IF NEW.decision = 'promote' THEN
    SELECT * INTO tomb FROM memories_memory WHERE id = NEW.tombstone_id;
    IF NOT FOUND OR tomb.bucket <> 'system' OR tomb.stance IS DISTINCT FROM NEW.stance_id
       OR tomb.organisation_id <> claim.organisation_id THEN
      RAISE EXCEPTION 'admissions_promotion_tombstone: a promotion names its own stance''s tombstone'
        USING ERRCODE = '23514';
    END IF;
  END IF;
  RETURN NEW;
END
""",
)

# The derived status of every system row. STATUS_DECISIONS and STATUS_RANK in
# admissions.models say the same in Python; a test holds the two together.
CLAIM_STATUS_VIEW = """
CREATE OR REPLACE VIEW admissions_claim_status AS
SELECT
  m.id AS claim_id,
  CASE
    WHEN m.stance IS NOT NULL THEN 'tombstone'
    WHEN latest.decision = 'admit' THEN 'admitted'
    WHEN latest.decision = 'reject' THEN 'rejected'
    WHEN latest.decision IN ('challenge', 'revoke') THEN 'challenged'
    ELSE 'candidate'
  END::varchar(16) AS status,
  CASE
    WHEN m.stance IS NOT NULL THEN 4
    WHEN latest.decision = 'admit' THEN 2
    WHEN latest.decision = 'reject' THEN 3
    WHEN latest.decision IN ('challenge', 'revoke') THEN 1
    ELSE 0
  END AS rank,
  latest.at AS decided_at,
  latest.id AS record_id
FROM memories_memory m
LEFT JOIN LATERAL (
  SELECT r.id, r.decision, r.at
  FROM admissions_admissionrecord r
  WHERE r.claim_id = m.id
    AND r.decision IN ('admit', 'reject', 'challenge', 'revoke')
    AND r.steward_id IS DISTINCT FROM m.written_by_id
  ORDER BY r.at DESC, r.id DESC
  LIMIT 1
) latest ON true
WHERE m.bucket = 'system';
"""
DROP_CLAIM_STATUS_VIEW = "DROP VIEW IF EXISTS admissions_claim_status;"
