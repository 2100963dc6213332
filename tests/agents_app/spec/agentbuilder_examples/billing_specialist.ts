// agents/agents/billing_specialist.ts
import { defineAgent } from '@standardagents/spec';
export default defineAgent({
name: 'billing_specialist',
type: 'ai_human',
description: 'Expert handling of billing inquiries, payment issues, and account balance questions',
icon: '/icons/billing.svg',
sideA: {
label: 'Billing Specialist',
prompt: 'billing_expert',
stopOnResponse: true,
endConversationTool: 'resolve_billing',
},
exposeAsTool: true,
toolDescription: 'Expert handling of billing and payment issues',
tags: ['support', 'tier-2', 'billing'],
});
