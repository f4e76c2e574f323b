"""initial audit schema

Revision ID: 0001
Revises: 
Create Date: 2026-12-02 12:52:28.400895
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('agent_reasoning_audit',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('session_id', sa.String(length=64), nullable=False),
    sa.Column('run_id', sa.String(length=64), nullable=False),
    sa.Column('step_index', sa.Integer(), nullable=False),
    sa.Column('agent_name', sa.String(length=32), nullable=False),
    sa.Column('reasoning_text', sa.Text().with_variant(mysql.LONGTEXT(), 'mariadb').with_variant(mysql.LONGTEXT(), 'mysql'), nullable=True),
    sa.Column('assistant_text', sa.Text().with_variant(mysql.LONGTEXT(), 'mariadb').with_variant(mysql.LONGTEXT(), 'mysql'), nullable=True),
    sa.Column('reasoning_bytes', sa.Integer(), nullable=False),
    sa.Column('assistant_bytes', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mariadb').with_variant(mysql.DATETIME(fsp=6), 'mysql'), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_index('uq_reasoning_run_step', 'agent_reasoning_audit', ['run_id', 'step_index'], unique=True)
    op.create_table('agent_step',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('session_id', sa.String(length=64), nullable=False),
    sa.Column('run_id', sa.String(length=64), nullable=True),
    sa.Column('step_index', sa.Integer(), nullable=False),
    sa.Column('agent_name', sa.String(length=32), nullable=False),
    sa.Column('model_input', sa.Text(), nullable=True),
    sa.Column('model_output', sa.Text(), nullable=True),
    sa.Column('thought', sa.Text(), nullable=True),
    sa.Column('has_tool_call', sa.Boolean(), nullable=True),
    sa.Column('duration_ms', sa.Integer(), nullable=True),
    sa.Column('token_count', sa.Integer(), nullable=True),
    sa.Column('created_at', sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mariadb').with_variant(mysql.DATETIME(fsp=6), 'mysql'), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_index('idx_agent_name', 'agent_step', ['agent_name'], unique=False)
    op.create_index('idx_agent_step_run_step', 'agent_step', ['run_id', 'step_index'], unique=True)
    op.create_index('idx_session_step', 'agent_step', ['session_id', 'step_index'], unique=False)
    op.create_table('chat_session',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('session_id', sa.String(length=64), nullable=False),
    sa.Column('tenant_id', sa.String(length=64), nullable=True),
    sa.Column('title', sa.String(length=200), nullable=True),
    sa.Column('created_at', sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mariadb').with_variant(mysql.DATETIME(fsp=6), 'mysql'), server_default=sa.text('(CURRENT_TIMESTAMP)'), nullable=False),
    sa.Column('updated_at', sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mariadb').with_variant(mysql.DATETIME(fsp=6), 'mysql'), nullable=True),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('session_id')
    )
    op.create_table('diagnosis_run',
    sa.Column('run_id', sa.String(length=64), nullable=False),
    sa.Column('session_id', sa.String(length=64), nullable=False),
    sa.Column('tenant_id', sa.String(length=64), nullable=True),
    sa.Column('agent_flow', sa.String(length=32), nullable=False),
    sa.Column('status', sa.String(length=32), nullable=False),
    sa.Column('intent', sa.String(length=32), nullable=True),
    sa.Column('release_outcome', sa.String(length=32), nullable=True),
    sa.Column('content_type', sa.String(length=32), nullable=True),
    sa.Column('query', sa.Text(), nullable=False),
    sa.Column('answer', sa.Text().with_variant(mysql.LONGTEXT(), 'mariadb').with_variant(mysql.LONGTEXT(), 'mysql'), nullable=True),
    sa.Column('conclusion', sa.Text(), nullable=True),
    sa.Column('self_evaluation', sa.JSON(), nullable=True),
    sa.Column('total_duration_ms', sa.Integer(), nullable=True),
    sa.Column('total_token_count', sa.Integer(), nullable=True),
    sa.Column('input_token_count', sa.Integer(), nullable=True),
    sa.Column('output_token_count', sa.Integer(), nullable=True),
    sa.Column('model_call_count', sa.Integer(), nullable=True),
    sa.Column('usage_unavailable_count', sa.Integer(), nullable=True),
    sa.Column('tokens_reconciled', sa.Boolean(), nullable=True),
    sa.Column('step_count', sa.Integer(), nullable=True),
    sa.Column('tool_call_count', sa.Integer(), nullable=True),
    sa.Column('error_code', sa.String(length=64), nullable=True),
    sa.Column('error_message', sa.Text(), nullable=True),
    sa.Column('feedback', sa.JSON(), nullable=True),
    sa.Column('created_at', sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mariadb').with_variant(mysql.DATETIME(fsp=6), 'mysql'), nullable=False),
    sa.Column('finished_at', sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mariadb').with_variant(mysql.DATETIME(fsp=6), 'mysql'), nullable=True),
    sa.PrimaryKeyConstraint('run_id')
    )
    op.create_index('idx_run_session_created', 'diagnosis_run', ['session_id', 'created_at'], unique=False)
    op.create_table('diagnosis_trace_event',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('run_id', sa.String(length=64), nullable=False),
    sa.Column('session_id', sa.String(length=64), nullable=False),
    sa.Column('sequence_no', sa.Integer(), nullable=False),
    sa.Column('phase', sa.String(length=32), nullable=False),
    sa.Column('event_type', sa.String(length=64), nullable=False),
    sa.Column('status', sa.String(length=32), nullable=True),
    sa.Column('details', sa.JSON(), nullable=True),
    sa.Column('created_at', sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mariadb').with_variant(mysql.DATETIME(fsp=6), 'mysql'), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_index('uq_trace_run_seq', 'diagnosis_trace_event', ['run_id', 'sequence_no'], unique=True)
    op.create_table('tool_invocation',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('session_id', sa.String(length=64), nullable=False),
    sa.Column('run_id', sa.String(length=64), nullable=False),
    sa.Column('step_id', sa.BigInteger(), nullable=True),
    sa.Column('tool_call_id', sa.String(length=128), nullable=False),
    sa.Column('tool_name', sa.String(length=64), nullable=False),
    sa.Column('input_params', sa.JSON(), nullable=True),
    sa.Column('output_preview', sa.Text(), nullable=True),
    sa.Column('output_length', sa.Integer(), nullable=True),
    sa.Column('retrieval_layer', sa.String(length=32), nullable=True),
    sa.Column('l0_match_count', sa.Integer(), nullable=True),
    sa.Column('l1_match_count', sa.Integer(), nullable=True),
    sa.Column('is_truncated', sa.Boolean(), nullable=True),
    sa.Column('relevance_level', sa.String(length=32), nullable=True),
    sa.Column('dedup_reason', sa.String(length=128), nullable=True),
    sa.Column('retrieval_details', sa.JSON(), nullable=True),
    sa.Column('duration_ms', sa.Integer(), nullable=True),
    sa.Column('success', sa.Boolean(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=True),
    sa.Column('error_message', sa.Text(), nullable=True),
    sa.Column('created_at', sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mariadb').with_variant(mysql.DATETIME(fsp=6), 'mysql'), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_index('idx_tool_session', 'tool_invocation', ['session_id'], unique=False)
    op.create_index('idx_tool_step', 'tool_invocation', ['step_id'], unique=False)
    op.create_index('uq_tool_run_call', 'tool_invocation', ['run_id', 'tool_call_id'], unique=True)


def downgrade() -> None:
    op.drop_index('uq_tool_run_call', table_name='tool_invocation')
    op.drop_index('idx_tool_step', table_name='tool_invocation')
    op.drop_index('idx_tool_session', table_name='tool_invocation')
    op.drop_table('tool_invocation')
    op.drop_index('uq_trace_run_seq', table_name='diagnosis_trace_event')
    op.drop_table('diagnosis_trace_event')
    op.drop_index('idx_run_session_created', table_name='diagnosis_run')
    op.drop_table('diagnosis_run')
    op.drop_table('chat_session')
    op.drop_index('idx_session_step', table_name='agent_step')
    op.drop_index('idx_agent_step_run_step', table_name='agent_step')
    op.drop_index('idx_agent_name', table_name='agent_step')
    op.drop_table('agent_step')
    op.drop_index('uq_reasoning_run_step', table_name='agent_reasoning_audit')
    op.drop_table('agent_reasoning_audit')
