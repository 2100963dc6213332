// agents/agents/support_agent.ts
import { defineAgent } from '@standardagents/spec';
export default defineAgent({
name: 'support_agent',
type: 'ai_human',
description: 'Handles customer inquiries and resolves support tickets',
icon: '/icons/support.svg',
sideA: {
label: 'Support',
prompt: 'customer_support',
stopOnResponse: true,
},
tags: ['support', 'customer-facing'],
});
