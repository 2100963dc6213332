// agents/agents/checkout_agent.ts
import { defineAgent } from '@standardagents/spec';
export default defineAgent({
name: 'checkout_agent',
type: 'ai_human',
sideA: {
label: 'Checkout Assistant',
prompt: 'checkout_flow',
stopOnResponse: false,
stopTool: 'confirm_order',
stopToolResponseProperty: 'orderId',
endConversationTool: 'complete_checkout',
maxTurns: 30,
},
tags: ['commerce', 'checkout'],
});
